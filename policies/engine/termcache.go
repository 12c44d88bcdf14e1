package engine

import (
	"encoding/json"
	"slices"
	"strconv"
	"sync"

	"github.com/open-policy-agent/opa/v1/ast"
	corev1 "k8s.io/api/core/v1"
)

// Most of the input is the same from one request to the next: the labels
// mpiguard's mutation sets, node selector terms, per-pod charges, quota
// limits. OPA terms are immutable, so such parts are built once and shared,
// like the quantity terms: each is cached under an encoding of its whole
// content (never a version or a pointer, so a cached term cannot be stale),
// the caches are bounded (a full cache is cleared), and large contents
// (annotations holding whole manifests) are never cached.

// maxCachedTerms bounds each content cache.
const maxCachedTerms = 4096

// maxCachedKey is the largest content encoding of a string map cached (such
// maps are labels and annotations, which can hold whole manifests);
// maxCachedStructKey that of the other contents (node selector terms,
// charges, quotas), whose size the API bounds.
const (
	maxCachedKey       = 512
	maxCachedStructKey = 4096
)

// contentCache maps a content encoding to its term.
type contentCache struct {
	mu     sync.RWMutex
	m      map[string]*ast.Term
	maxKey int
}

func newContentCache(maxKey int) *contentCache {
	return &contentCache{m: map[string]*ast.Term{}, maxKey: maxKey}
}

func (c *contentCache) lookup(key []byte) *ast.Term {
	c.mu.RLock()
	t := c.m[string(key)] // no allocation: the compiler converts in place
	c.mu.RUnlock()
	return t
}

// store caches t under key and returns the cached term (another request may
// have stored one first). A full cache starts afresh: contents that recur come
// back within a few requests, while a cache that only refused new entries
// would, after enough one-off contents (labels naming each job), never cache
// again.
func (c *contentCache) store(key []byte, t *ast.Term) *ast.Term {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.m[string(key)]; ok {
		return old
	}
	if len(c.m) >= maxCachedTerms {
		clear(c.m)
	}
	c.m[string(key)] = t
	return t
}

// cached returns the term for the content encoded in key, building it with
// build on a miss. Keys longer than the cache's maxKey are not cached.
func (c *contentCache) cached(key []byte, build func() *ast.Term) *ast.Term {
	if len(key) > c.maxKey {
		return build()
	}
	if t := c.lookup(key); t != nil {
		return t
	}
	return c.store(key, build())
}

var (
	stringMapTerms = newContentCache(maxCachedKey)
	nodeTermsTerms = newContentCache(maxCachedStructKey)
	chargeTerms    = newContentCache(maxCachedStructKey)
	resourceTerms  = newContentCache(maxCachedStructKey)
)

// keyBuf is a scratch buffer for content encodings.
type keyBuf struct {
	b    []byte
	strs []string
}

var keyBufs = sync.Pool{New: func() any { return &keyBuf{b: make([]byte, 0, 256)} }}

func getKeyBuf() *keyBuf { return keyBufs.Get().(*keyBuf) }

func (k *keyBuf) release() {
	if cap(k.b) > 2*maxCachedStructKey {
		return // do not keep buffers grown by large contents
	}
	k.b = k.b[:0]
	clear(k.strs)
	k.strs = k.strs[:0]
	keyBufs.Put(k)
}

// str appends s, length-prefixed so that no two contents encode alike.
func (k *keyBuf) str(s string) {
	k.b = strconv.AppendInt(k.b, int64(len(s)), 10)
	k.b = append(k.b, ':')
	k.b = append(k.b, s...)
}

func (k *keyBuf) int(n int64) {
	k.b = strconv.AppendInt(k.b, n, 10)
	k.b = append(k.b, ';')
}

// stringMap appends m, keys sorted.
func (k *keyBuf) stringMap(m map[string]string) {
	k.strs = k.strs[:0]
	for key := range m {
		k.strs = append(k.strs, key)
	}
	slices.Sort(k.strs)
	k.int(int64(len(m)))
	for _, key := range k.strs {
		k.str(key)
		k.str(m[key])
	}
}

// resources appends list, names sorted: each quantity as its milli amount and
// format, which determine its term (quantityTerm).
func (k *keyBuf) resources(list corev1.ResourceList) {
	k.strs = k.strs[:0]
	for name := range list {
		k.strs = append(k.strs, string(name))
	}
	slices.Sort(k.strs)
	k.int(int64(len(list)))
	for _, name := range k.strs {
		q := list[corev1.ResourceName(name)]
		k.str(name)
		k.int(q.MilliValue())
		k.str(string(q.Format))
	}
}

func (k *keyBuf) names(names []corev1.ResourceName) {
	k.int(int64(len(names)))
	for _, n := range names {
		k.str(string(n))
	}
}

func (k *keyBuf) requirements(reqs []corev1.NodeSelectorRequirement) {
	k.int(int64(len(reqs)))
	for _, r := range reqs {
		k.str(r.Key)
		k.str(string(r.Operator))
		k.int(int64(len(r.Values)))
		for _, v := range r.Values {
			k.str(v)
		}
	}
}

// Shared empty values: most maps and lists of the input are empty.
var (
	emptyObject = ast.ObjectTerm()
	emptyArray  = ast.ArrayTerm()
)

// vocabulary are strings that recur across requests (namespace, runtime and
// quota names, resource names, label keys): their terms are shared. Only
// short strings are kept, at most maxCachedTerms.
var vocabulary = struct {
	sync.RWMutex
	m map[string]*ast.Term
}{m: map[string]*ast.Term{}}

func vocabularyTerm(s string) *ast.Term {
	if t, ok := sharedStrings[s]; ok {
		return t
	}
	if len(s) > 63 {
		return ast.StringTerm(s)
	}
	vocabulary.RLock()
	t := vocabulary.m[s]
	vocabulary.RUnlock()
	if t != nil {
		return t
	}
	t = ast.StringTerm(s)
	vocabulary.Lock()
	defer vocabulary.Unlock()
	if old, ok := vocabulary.m[s]; ok {
		return old
	}
	if len(vocabulary.m) < maxCachedTerms {
		vocabulary.m[s] = t
	}
	return t
}

// int64Term is n as a number term, shared for small n.
func int64Term(n int64) *ast.Term {
	if n >= 0 && n < int64(len(smallInts)) {
		return smallInts[n]
	}
	return ast.NumberTerm(json.Number(strconv.FormatInt(n, 10)))
}

// keyedCache maps a comparable key (scalars and shared terms) to its term.
// Keys holding terms built per request (past a cache's bound, or too large
// to cache) never match again; the bound keeps them from piling up.
type keyedCache[K comparable] struct {
	mu sync.RWMutex
	m  map[K]*ast.Term
}

func newKeyedCache[K comparable]() *keyedCache[K] { return &keyedCache[K]{m: map[K]*ast.Term{}} }

func (c *keyedCache[K]) get(key K, build func() *ast.Term) *ast.Term {
	c.mu.RLock()
	t := c.m[key]
	c.mu.RUnlock()
	if t != nil {
		return t
	}
	t = build()
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.m[key]; ok {
		return old
	}
	if len(c.m) < maxCachedTerms {
		c.m[key] = t
	}
	return t
}
