package constraints

import "strings"

// globProblem says why the runtime-constraints policy could read a valid
// path.Match pattern differently from path.Match, or "" when it reads it the
// same. The policy matches with Rego's glob.match (after writing [^ as [!),
// whose classes are either a list of characters or a single range, where
// path.Match mixes characters and ranges. FuzzParseConstraints found where
// they part:
//   - "[!a]" is the class of '!' and 'a' to path.Match, "not a" to glob.match:
//     "team-[!a]" let team-b in where path.Match keeps it out;
//   - a reversed range ("[^b-0]") is empty to path.Match, so negated it
//     matches everything, while glob.match fails on it and matches nothing;
//   - a range with more characters ("[0-00]", "[a-cx]") fails in glob.match,
//     and in a list '-' is itself ("[ab-c]" takes '-' to glob.match, not to
//     path.Match, and namespace names contain '-');
//   - other characters in a class ("[{1]" is '{' or '1' to path.Match,
//     and matches nothing to glob.match).
//
// Such patterns are refused, so the policy denies with the annotation to fix
// instead of deciding otherwise than the documented path.Match semantics.
func globProblem(pattern string) string {
	for i := 0; i < len(pattern); i++ {
		switch pattern[i] {
		case '\\':
			i++ // an escaped character is itself
		case '[':
			start := i + 1
			negated := start < len(pattern) && pattern[start] == '^'
			if negated {
				start++
			}
			// path.Match checked the pattern: the class is not empty and
			// its first character is not ']', so the body ends at the next
			// ']' unless escaped, and escapes are refused below.
			if start >= len(pattern) {
				return "unterminated character class"
			}
			end := start + 1 + strings.IndexByte(pattern[start+1:], ']')
			if end <= start {
				return "unterminated character class"
			}
			if problem := classProblem([]rune(pattern[start:end]), negated); problem != "" {
				return problem
			}
			i = end
		}
	}
	return ""
}

func classProblem(body []rune, negated bool) string {
	const supported = "write classes as characters ([abc], [^abc]) or one range ([a-z], [^a-z])"
	switch {
	case !negated && body[0] == '!':
		return "path.Match reads [!...] as a class containing '!', not its negation; write a negated class as [^...]"
	case strings.ContainsRune(string(body), '\\'):
		return "escapes in a character class are not supported; " + supported
	case strings.ContainsFunc(string(body), func(r rune) bool { return !namespaceClassRune(r) }):
		// glob.match gives some of them a meaning inside a class ("[{1]"
		// matched "1" to path.Match and nothing to glob.match), and a
		// namespace name holds none of them.
		return "a character class may hold only lowercase letters, digits and one range (namespace names hold nothing else); " + supported
	case len(body) == 3 && body[1] == '-':
		if body[2] < body[0] {
			return "the range " + string(body) + " runs backwards and matches nothing; write it low-high"
		}
		return ""
	case strings.ContainsRune(string(body), '-'):
		return "a class mixing a range with other characters, or holding '-', is not supported; " + supported
	}
	return ""
}

// namespaceClassRune says whether r may appear in a character class: a
// character of a namespace name, '-' only as the range operator.
func namespaceClassRune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-'
}
