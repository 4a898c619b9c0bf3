package formats

import "github.com/bqcdc/bqcdc/internal/limits"

// checkJSONBounds looks at JSON text once, without parsing it, for what
// parsing it would cost too much: more than Pub/Sub's message size, nesting
// deeper than limits.MaxJSONDepth, or a number longer than
// limits.MaxNumberLen characters (reading a number exactly costs time
// quadratic in its length). Malformed JSON passes: the parser reports it.
func checkJSONBounds(data []byte) error {
	if len(data) > limits.MaxMessageBytes {
		return limits.Errorf("the JSON message is %d bytes, more than Pub/Sub's %d-byte message limit", len(data), limits.MaxMessageBytes)
	}
	depth, number := 0, 0
	inString, escaped := false, false
	for i, c := range data {
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		switch c {
		case '-', '+', '.', 'e', 'E', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
			number++
			if number > limits.MaxNumberLen {
				return limits.Errorf("a JSON number at byte %d is longer than %d characters", i-number+1, limits.MaxNumberLen)
			}
			continue
		case '"':
			inString = true
		case '{', '[':
			depth++
			if depth > limits.MaxJSONDepth {
				return limits.Errorf("JSON nests deeper than %d levels at byte %d", limits.MaxJSONDepth, i)
			}
		case '}', ']':
			depth--
		}
		number = 0
	}
	return nil
}
