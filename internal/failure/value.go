package failure

import (
	"errors"
	"fmt"
	"strings"
)

// Row values in error texts.
//
// A dead letter's reason and the log lines of a failed message must not
// quote values of the row (personal data, secrets in a column) unless the
// operator opts in (BQCDC_LOG_VALUES): logs and the dead-letter table's
// reason column are read more widely than the changelog. The errors that
// quote a value say so in their type, carrying the text twice: with the
// value, and with a placeholder in its place. Reason picks one. The text
// with the value stays what Error returns, so tests, errors.Is/As and
// callers that do not care see no change.

// Withheld takes the place of a value in a redacted reason.
const Withheld = "[value withheld]"

// Value marks an argument of Errorf as a value of the row: it prints as v
// does (with the same verb and flags) in the full text and as Withheld in
// the redacted one.
func Value(v any) any { return value{v} }

type value struct{ v any }

func (x value) Format(f fmt.State, verb rune) { fmt.Fprintf(f, fmt.FormatString(f, verb), x.v) }
func (x value) withheld() any                 { return placeholder{} }

// Valuer is an Errorf argument that quotes a value of the row, with the
// form to print instead when values are withheld (a package can keep the
// kind of a value, as "string [value withheld]").
type Valuer interface{ Withheld() any }

type placeholder struct{}

func (placeholder) Format(f fmt.State, _ rune) { f.Write([]byte(Withheld)) }

// ValueError is an error whose text quotes a value of the row.
type ValueError struct {
	err      error
	redacted string
}

func (e *ValueError) Error() string { return e.err.Error() }
func (e *ValueError) Unwrap() error { return e.err }

// Redacted is the error's text without the value.
func (e *ValueError) Redacted() string { return e.redacted }

// WithValue marks err, whose text quotes a value of the row, with redacted:
// what to say instead (the kind of problem, not the value).
func WithValue(err error, redacted string) error {
	if err == nil {
		return nil
	}
	return &ValueError{err: err, redacted: redacted}
}

// Errorf is fmt.Errorf for a text that quotes values of the row: the
// arguments made with Value (or implementing Valuer) are withheld from its
// redacted form. %w wraps as fmt.Errorf does (printed as %v in the
// redacted form, whose own values Reason withholds in turn). Without such
// arguments it is fmt.Errorf.
func Errorf(format string, args ...any) error {
	full := make([]any, len(args))
	redacted := make([]any, len(args))
	marked := false
	for i, a := range args {
		full[i], redacted[i] = a, a
		switch x := a.(type) {
		case value:
			redacted[i], marked = x.withheld(), true
		case Valuer:
			redacted[i], marked = x.Withheld(), true
		}
	}
	err := fmt.Errorf(format, full...)
	if !marked {
		return err
	}
	return &ValueError{err: err, redacted: fmt.Sprintf(strings.ReplaceAll(format, "%w", "%v"), redacted...)}
}

// Reason renders err for a dead letter or a log line: its text as it is
// when values is true; otherwise with the text of every ValueError in it
// replaced by its redacted form. The wrappers around a ValueError (%w)
// quote its text verbatim, so the replacement finds it; a wrapper that
// rewrote it (one that cleaned or cut the text) leaves nothing to find, and
// then the reason is only the stage and the redacted text: a value is never
// let through because its text could not be located.
func Reason(err error, values bool) string {
	if err == nil {
		return ""
	}
	text := err.Error()
	if values {
		return text
	}
	lost := ""
	var walk func(e error, inValue bool)
	walk = func(e error, inValue bool) {
		if e == nil {
			return
		}
		if ve, ok := e.(*ValueError); ok {
			full := ve.Error()
			switch {
			case strings.Contains(text, full):
				text = strings.ReplaceAll(text, full, ve.redacted)
			case !inValue && lost == "":
				lost = ve.redacted
			}
			inValue = true
		}
		switch u := e.(type) {
		case interface{ Unwrap() error }:
			walk(u.Unwrap(), inValue)
		case interface{ Unwrap() []error }:
			for _, x := range u.Unwrap() {
				walk(x, inValue)
			}
		}
	}
	walk(err, false)
	if lost != "" {
		if stage := StageOf(err); stage != "" {
			return string(stage) + ": " + lost + " (the rest of the reason is withheld: it may quote values)"
		}
		return lost + " (the rest of the reason is withheld: it may quote values)"
	}
	return text
}

// IsValueError reports whether err's text quotes a value of the row.
func IsValueError(err error) bool {
	var ve *ValueError
	return errors.As(err, &ve)
}
