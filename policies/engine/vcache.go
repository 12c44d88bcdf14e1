package engine

import (
	"sync"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/topdown"
)

// virtualCache is the cache of rule and function values of one evaluation
// (topdown.VirtualCache), kept flat: OPA's default builds a tree of hash maps,
// one node per reference segment, which cost about a quarter of the
// allocations of a decision. Entries live in slices reused across
// evaluations (virtualCaches pools them), so a warm cache allocates nothing.
type virtualCache struct {
	// frames are the Push/Pop frames (a `with` modifier evaluates in a fresh
	// frame); each maps a reference hash to its latest entry in that frame.
	frames []map[int]int32
	// marks[i] is len(entries) when frame i was pushed: Pop drops what the
	// frame added, so a frame's entries are always the tail from its mark.
	marks   []int32
	entries []vcEntry
	// refs holds the entries' reference terms: callers reuse their reference
	// slices, so Put copies the terms (never the values, which are immutable).
	refs []*ast.Term
	// base holds values computed before the evaluation (the static rules),
	// seen from the bottom frame only: a `with` frame evaluates afresh.
	base *staticValues
}

type vcEntry struct {
	off, n int32
	// next is the previous entry of the frame with the same hash, -1 if none.
	next      int32
	value     *ast.Term
	undefined bool
}

var virtualCaches = sync.Pool{New: func() any {
	c := &virtualCache{}
	c.Push()
	return c
}}

// newVirtualCache returns an empty cache for one evaluation; release it when
// the evaluation's results have been read.
func newVirtualCache() *virtualCache { return virtualCaches.Get().(*virtualCache) }

func (c *virtualCache) release() {
	for i := 1; i < len(c.frames); i++ {
		c.frames[i] = nil
	}
	c.frames, c.marks = c.frames[:1], c.marks[:1]
	c.base = nil
	clear(c.frames[0])
	clear(c.entries) // drop the references to this evaluation's terms
	clear(c.refs)
	c.entries, c.refs = c.entries[:0], c.refs[:0]
	virtualCaches.Put(c)
}

var _ topdown.VirtualCache = (*virtualCache)(nil)

// Push starts a new, empty frame.
func (c *virtualCache) Push() {
	c.frames = append(c.frames, map[int]int32{})
	c.marks = append(c.marks, int32(len(c.entries)))
}

// Pop drops the top frame and every entry it holds.
func (c *virtualCache) Pop() {
	top := len(c.frames) - 1
	mark := c.marks[top]
	off := int32(len(c.refs))
	if int(mark) < len(c.entries) {
		off = c.entries[mark].off
	}
	clear(c.entries[mark:])
	c.entries = c.entries[:mark]
	clear(c.refs[off:])
	c.refs = c.refs[:off]
	c.frames[top] = nil
	c.frames, c.marks = c.frames[:top], c.marks[:top]
}

func (c *virtualCache) find(ref ast.Ref) (int32, bool) {
	frame := c.frames[len(c.frames)-1]
	i, ok := frame[ref.Hash()]
	for ok && i >= 0 {
		e := &c.entries[i]
		if int(e.n) == len(ref) && equalTerms(c.refs[e.off:e.off+e.n], ref) {
			return i, true
		}
		i = e.next
	}
	return 0, false
}

func equalTerms(a []*ast.Term, b ast.Ref) bool {
	for i := range a {
		if !a[i].Equal(b[i]) {
			return false
		}
	}
	return true
}

// Get returns the value cached for ref; (nil, true) when ref is cached as
// undefined, (nil, false) when it is not cached.
func (c *virtualCache) Get(ref ast.Ref) (*ast.Term, bool) {
	i, ok := c.find(ref)
	if !ok {
		if len(c.frames) == 1 && c.base != nil {
			return c.base.get(ref)
		}
		return nil, false
	}
	e := &c.entries[i]
	if e.undefined {
		return nil, true
	}
	return e.value, false
}

// Put caches value for ref in the top frame; a nil value records that ref is undefined.
func (c *virtualCache) Put(ref ast.Ref, value *ast.Term) {
	if i, ok := c.find(ref); ok {
		e := &c.entries[i]
		e.value, e.undefined = value, value == nil
		return
	}
	frame := c.frames[len(c.frames)-1]
	h := ref.Hash()
	next, ok := frame[h]
	if !ok {
		next = -1
	}
	off := int32(len(c.refs))
	c.refs = append(c.refs, ref...)
	frame[h] = int32(len(c.entries))
	c.entries = append(c.entries, vcEntry{off: off, n: int32(len(ref)), next: next, value: value, undefined: value == nil})
}

// Keys lists the references cached with a value in the top frame (for tracing).
func (c *virtualCache) Keys() []ast.Ref {
	var keys []ast.Ref
	if len(c.frames) == 1 && c.base != nil {
		for i, ref := range c.base.refs {
			if c.base.values[i] != nil {
				keys = append(keys, ref)
			}
		}
	}
	for _, e := range c.entries[c.marks[len(c.marks)-1]:] {
		if e.value != nil {
			keys = append(keys, append(ast.Ref(nil), c.refs[e.off:e.off+e.n]...))
		}
	}
	return keys
}
