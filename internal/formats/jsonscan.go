package formats

import (
	"bytes"

	"github.com/bqcdc/bqcdc/internal/limits"
)

// checkJSONBounds looks at JSON text once, without parsing it, for what
// parsing it would cost too much: more than Pub/Sub's message size, nesting
// deeper than limits.MaxJSONDepth, or a number longer than
// limits.MaxNumberLen characters (reading a number exactly costs time
// quadratic in its length). Malformed JSON passes: the parser reports it.
// Strings are skipped with bytes.IndexByte, so the scan runs at memory
// speed over the schema text that makes up most of a JsonConverter message.
func checkJSONBounds(data []byte) error {
	if len(data) > limits.MaxMessageBytes {
		return limits.Errorf("the JSON message is %d bytes, more than Pub/Sub's %d-byte message limit", len(data), limits.MaxMessageBytes)
	}
	depth, number := 0, 0
	for i := 0; i < len(data); i++ {
		switch c := data[i]; jsonClass[c] {
		case jsonNumber:
			if number++; number > limits.MaxNumberLen {
				return limits.Errorf("a JSON number at byte %d is longer than %d characters", i-number+1, limits.MaxNumberLen)
			}
			continue
		case jsonQuote:
			end := closingQuote(data, i+1)
			if end < 0 {
				return nil // unterminated: the parser reports it
			}
			i = end
		case jsonOpen:
			if depth++; depth > limits.MaxJSONDepth {
				return limits.Errorf("JSON nests deeper than %d levels at byte %d", limits.MaxJSONDepth, i)
			}
		case jsonClose:
			depth--
		}
		number = 0
	}
	return nil
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
)

// jsonClass sorts the bytes that matter to checkJSONBounds. Letters of
// true, false and null count as "other"; e and E as number characters (they
// only end up in a run when they belong to a number).
var jsonClass = func() (t [256]uint8) {
	for _, c := range "-+.eE0123456789" {
		t[c] = jsonNumber
	}
	t['"'] = jsonQuote
	t['{'], t['['] = jsonOpen, jsonOpen
	t['}'], t[']'] = jsonClose, jsonClose
	return t
}()
