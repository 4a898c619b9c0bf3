package cost

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

type kind int

const (
	kIdent  kind = iota // a bare word: keyword or identifier
	kQuoted             // a backquoted identifier (text is its content)
	kString             // a string literal (text is its value)
	kBytes              // a bytes literal (text is its value)
	kNumber
	kPunct // operators and punctuation: ( ) , . ; * = < <= > >= != <> + - / || ...
)

type token struct {
	kind kind
	text string // bare words as written; literals unescaped
	up   string // bare words upper-cased
	pos  int    // byte offset in the statement's SQL, for errors
	// match is the index of the matching parenthesis, for ( and ).
	match int
}

func (t token) is(word string) bool { return t.kind == kIdent && t.up == word }
func (t token) punct(p string) bool { return t.kind == kPunct && t.text == p }

// lex splits SQL into tokens, dropping comments (--, # and /* */).
func lex(sql string) ([]token, error) {
	var out []token
	i := 0
	for i < len(sql) {
		c := sql[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f':
			i++
		case c == '#' || (c == '-' && strings.HasPrefix(sql[i:], "--")):
			for i < len(sql) && sql[i] != '\n' {
				i++
			}
		case c == '/' && strings.HasPrefix(sql[i:], "/*"):
			end := strings.Index(sql[i+2:], "*/")
			if end < 0 {
				return nil, fmt.Errorf("offset %d: unterminated comment", i)
			}
			i += end + 4
		case c == '`':
			end := strings.IndexByte(sql[i+1:], '`')
			if end < 0 {
				return nil, fmt.Errorf("offset %d: unterminated quoted identifier", i)
			}
			out = append(out, token{kind: kQuoted, text: sql[i+1 : i+1+end], pos: i})
			i += end + 2
		case c == '\'' || c == '"':
			v, n, err := lexString(sql[i:], false)
			if err != nil {
				return nil, fmt.Errorf("offset %d: %w", i, err)
			}
			out = append(out, token{kind: kString, text: v, pos: i})
			i += n
		case isIdentStart(c):
			t, n, err := lexWord(sql, i)
			if err != nil {
				return nil, err
			}
			out = append(out, t)
			i += n
		case c >= '0' && c <= '9' || (c == '.' && i+1 < len(sql) && sql[i+1] >= '0' && sql[i+1] <= '9'):
			j := numberEnd(sql, i)
			out = append(out, token{kind: kNumber, text: sql[i:j], pos: i})
			i = j
		default:
			n, space, err := lexPunct(sql, i)
			if err != nil {
				return nil, err
			}
			if !space {
				out = append(out, token{kind: kPunct, text: sql[i : i+n], pos: i})
			}
			i += n
		}
	}
	return out, nil
}

// lexWord reads the word at sql[i]: an identifier or keyword, or a
// prefixed string literal (r'...', b'...', rb'...', br'...').
func lexWord(sql string, i int) (token, int, error) {
	j := i
	for j < len(sql) && isIdentPart(sql[j]) {
		j++
	}
	word := sql[i:j]
	up := strings.ToUpper(word)
	if j < len(sql) && (sql[j] == '\'' || sql[j] == '"') && (up == "R" || up == "B" || up == "RB" || up == "BR") {
		v, n, err := lexString(sql[j:], strings.Contains(up, "R"))
		if err != nil {
			return token{}, 0, fmt.Errorf("offset %d: %w", i, err)
		}
		k := kString
		if strings.Contains(up, "B") {
			k = kBytes
		}
		return token{kind: k, text: v, pos: i}, j + n - i, nil
	}
	return token{kind: kIdent, text: word, up: up, pos: i}, j - i, nil
}

// numberEnd is where the number at sql[i] ends: hexadecimal (0x...), or
// decimal with an exponent.
func numberEnd(sql string, i int) int {
	j := i
	if sql[i] == '0' && i+1 < len(sql) && (sql[i+1] == 'x' || sql[i+1] == 'X') {
		j += 2
		for j < len(sql) && strings.IndexByte("0123456789abcdefABCDEF", sql[j]) >= 0 {
			j++
		}
		return j
	}
	for j < len(sql) && (sql[j] >= '0' && sql[j] <= '9' || sql[j] == '.') {
		j++
	}
	if j < len(sql) && (sql[j] == 'e' || sql[j] == 'E') {
		k := j + 1
		if k < len(sql) && (sql[k] == '+' || sql[k] == '-') {
			k++
		}
		if k < len(sql) && sql[k] >= '0' && sql[k] <= '9' {
			j = k
			for j < len(sql) && sql[j] >= '0' && sql[j] <= '9' {
				j++
			}
		}
	}
	return j
}

// lexPunct is the length of the operator or punctuation at sql[i], and
// true for a non-ASCII space (skipped).
func lexPunct(sql string, i int) (int, bool, error) {
	for _, op := range []string{"<=", ">=", "!=", "<>", "||", "=>", "->", ">>", "<<"} {
		if strings.HasPrefix(sql[i:], op) {
			return 2, false, nil
		}
	}
	if sql[i] >= utf8.RuneSelf {
		r, size := utf8.DecodeRuneInString(sql[i:])
		if unicode.IsSpace(r) {
			return size, true, nil
		}
		return 0, false, fmt.Errorf("offset %d: unexpected character %q", i, r)
	}
	return 1, false, nil
}

func isIdentStart(c byte) bool { return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isIdentPart(c byte) bool  { return isIdentStart(c) || c >= '0' && c <= '9' }

// lexString reads a quoted literal at the start of s (single, double or
// triple quotes), returning its value and length. Outside raw literals,
// backslash escapes are decoded (\x.. and octal to bytes, \u and \U to UTF-8).
func lexString(s string, raw bool) (string, int, error) {
	q := s[:1]
	if strings.HasPrefix(s, q+q+q) {
		q = q + q + q
	}
	var b strings.Builder
	i := len(q)
	for i < len(s) {
		if strings.HasPrefix(s[i:], q) {
			return b.String(), i + len(q), nil
		}
		c := s[i]
		if len(q) == 1 && c == '\n' {
			return "", 0, fmt.Errorf("newline in a string literal")
		}
		if c != '\\' {
			b.WriteByte(c)
			i++
			continue
		}
		if i+1 >= len(s) {
			break
		}
		if raw {
			b.WriteString(s[i : i+2])
			i += 2
			continue
		}
		n, err := unescape(&b, s, i+2, s[i+1])
		if err != nil {
			return "", 0, err
		}
		i += 2 + n
	}
	return "", 0, fmt.Errorf("unterminated string literal")
}

// unescape writes the value of the escape \e, whose operand starts at
// s[i], and returns the operand's length.
func unescape(b *strings.Builder, s string, i int, e byte) (int, error) {
	switch e {
	case 'a':
		b.WriteByte('\a')
	case 'b':
		b.WriteByte('\b')
	case 'f':
		b.WriteByte('\f')
	case 'n':
		b.WriteByte('\n')
	case 'r':
		b.WriteByte('\r')
	case 't':
		b.WriteByte('\t')
	case 'v':
		b.WriteByte('\v')
	case 'x', 'X':
		if i+2 > len(s) {
			return 0, fmt.Errorf("short \\x escape")
		}
		var v byte
		if _, err := fmt.Sscanf(s[i:i+2], "%02x", &v); err != nil {
			return 0, fmt.Errorf("bad \\x escape %q", s[i:i+2])
		}
		b.WriteByte(v)
		return 2, nil
	case 'u', 'U':
		n := 4
		if e == 'U' {
			n = 8
		}
		if i+n > len(s) {
			return 0, fmt.Errorf("short \\%c escape", e)
		}
		var r rune
		if _, err := fmt.Sscanf(s[i:i+n], "%x", &r); err != nil {
			return 0, fmt.Errorf("bad \\%c escape %q", e, s[i:i+n])
		}
		b.WriteRune(r)
		return n, nil
	case '0', '1', '2', '3':
		if i+2 > len(s) {
			return 0, fmt.Errorf("short octal escape")
		}
		var v byte
		if _, err := fmt.Sscanf(s[i-1:i+2], "%03o", &v); err != nil {
			return 0, fmt.Errorf("bad octal escape %q", s[i-1:i+2])
		}
		b.WriteByte(v)
		return 2, nil
	default: // \\ \' \" \` \? and friends stand for themselves
		b.WriteByte(e)
	}
	return 0, nil
}

// statements splits tokens into statements at the semicolons outside
// parentheses, and matches each statement's parentheses.
func statements(toks []token) ([][]token, error) {
	var out [][]token
	depth, start := 0, 0
	for i, t := range toks {
		switch {
		case t.punct("("):
			depth++
		case t.punct(")"):
			depth--
			if depth < 0 {
				return nil, fmt.Errorf("offset %d: unbalanced )", t.pos)
			}
		case t.punct(";") && depth == 0:
			if i > start {
				out = append(out, toks[start:i])
			}
			start = i + 1
		}
	}
	if depth != 0 {
		return nil, fmt.Errorf("unbalanced parentheses")
	}
	if start < len(toks) {
		out = append(out, toks[start:])
	}
	for _, s := range out {
		matchParens(s)
	}
	return out, nil
}

func matchParens(toks []token) {
	var stack []int
	for i := range toks {
		switch {
		case toks[i].punct("("):
			stack = append(stack, i)
		case toks[i].punct(")"):
			o := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			toks[o].match, toks[i].match = i, o
		}
	}
}

// reserved are GoogleSQL's reserved keywords: a bare one is never a column.
var reserved = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`ALL AND ANY ARRAY AS ASC ASSERT_ROWS_MODIFIED AT BETWEEN BY CASE CAST COLLATE
		CONTAINS CREATE CROSS CUBE CURRENT DEFAULT DEFINE DESC DISTINCT ELSE END ENUM ESCAPE EXCEPT EXCLUDE EXISTS
		EXTRACT FALSE FETCH FOLLOWING FOR FROM FULL GROUP GROUPING GROUPS HASH HAVING IF IGNORE IN INNER INTERSECT
		INTERVAL INTO IS JOIN LATERAL LEFT LIKE LIMIT LOOKUP MERGE NATURAL NEW NO NOT NULL NULLS OF ON OR ORDER OUTER
		OVER PARTITION PRECEDING PROTO QUALIFY RANGE RECURSIVE RESPECT RIGHT ROLLUP ROWS SELECT SET SOME STRUCT
		TABLESAMPLE THEN TO TREAT TRUE UNBOUNDED UNION UNNEST USING WHEN WHERE WINDOW WITH WITHIN`) {
		m[w] = true
	}
	return m
}()
