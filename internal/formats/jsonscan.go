package formats

import (
	"bytes"
	"unicode/utf8"

	"github.com/bqcdc/bqcdc/internal/limits"
)

// checkJSONBounds looks at JSON text once, without parsing it, for what
// parsing it would cost too much: more than Pub/Sub's message size, nesting
// deeper than limits.MaxJSONDepth, a number longer than
// limits.MaxNumberLen characters (reading a number exactly costs time
// quadratic in its length), or more values than the decoded-size budget
// pays for at limits.JSONValueCost each (encoding/json makes an interface
// value, a box and a share of a map or slice of each). It refuses text
// that is not UTF-8 (ErrNotUTF8), which encoding/json would silently turn
// into U+FFFD. Malformed JSON passes: the parser reports it. Strings are
// skipped with bytes.IndexByte, so the scan runs at memory speed over the
// schema text that makes up most of a JsonConverter message.
func checkJSONBounds(data []byte) error {
	if len(data) > limits.MaxMessageBytes {
		return limits.Errorf("the JSON message is %d bytes, more than Pub/Sub's %d-byte message limit", len(data), limits.MaxMessageBytes)
	}
	if !utf8.Valid(data) {
		return notUTF8("the JSON text", firstInvalid(data))
	}
	depth, number, values := 0, 0, int64(0)
	budget := limits.DecodeBudget(len(data)) / limits.JSONValueCost
	for i := 0; i < len(data); i++ {
		c := data[i]
		switch jsonClass[c] {
		case jsonNumber:
			if number == 0 {
				values++
			}
			if number++; number > limits.MaxNumberLen {
				return limits.Errorf("a JSON number at byte %d is longer than %d characters", i-number+1, limits.MaxNumberLen)
			}
			continue
		case jsonQuote:
			values++
			end := closingQuote(data, i+1)
			if end < 0 {
				return nil // unterminated: the parser reports it
			}
			i = end
		case jsonOpen:
			values++
			if depth++; depth > limits.MaxJSONDepth {
				return limits.Errorf("JSON nests deeper than %d levels at byte %d", limits.MaxJSONDepth, i)
			}
		case jsonClose:
			depth--
		case jsonLiteral:
			values++
			for i+1 < len(data) && data[i+1] >= 'a' && data[i+1] <= 'z' {
				i++ // the rest of the word (its e is not a number)
			}
		}
		if values > budget {
			return limits.Errorf("the JSON value at byte %d is one more than the %d the message's %d-byte decoded-size budget pays for (%d bytes each)",
				i, budget, limits.DecodeBudget(len(data)), limits.JSONValueCost)
		}
		number = 0
	}
	return nil
}

// firstInvalid is the offset of the first byte of data that is not UTF-8.
func firstInvalid(data []byte) int {
	for i := 0; i < len(data); {
		r, n := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return len(data)
}

// closingQuote returns the index of the quote that ends the string starting
// at from, or -1.
func closingQuote(data []byte, from int) int {
	for {
		j := bytes.IndexByte(data[from:], '"')
		if j < 0 {
			return -1
		}
		end := from + j
		backslashes := 0
		for k := end - 1; k >= from && data[k] == '\\'; k-- {
			backslashes++
		}
		if backslashes%2 == 0 {
			return end
		}
		from = end + 1
	}
}

const (
	jsonOther = iota
	jsonNumber
	jsonQuote
	jsonOpen
	jsonClose
	jsonLiteral // the first letter of true, false or null
)

// jsonClass sorts the bytes that matter to checkJSONBounds. The first
// letters of true, false and null start a literal, whose other letters are
// skipped; e and E are number characters (outside a literal they only end
// up in a run when they belong to a number).
var jsonClass = func() (t [256]uint8) {
	for _, c := range "-+.eE0123456789" {
		t[c] = jsonNumber
	}
	t['"'] = jsonQuote
	t['{'], t['['] = jsonOpen, jsonOpen
	t['}'], t[']'] = jsonClose, jsonClose
	t['t'], t['f'], t['n'] = jsonLiteral, jsonLiteral, jsonLiteral
	return t
}()
