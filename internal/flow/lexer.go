package flow

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Pos is a position in a flow file. Line and Col are 1-based; Col counts
// characters, as editors do.
type Pos struct {
	File      string
	Line, Col int
}

// String renders file:line:column, or the file alone for a problem with the
// whole file (Line 0).
func (p Pos) String() string {
	if p.Line == 0 {
		return p.File
	}
	return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Col)
}

// Error is a flow error at a position. Its text leads with file:line:column so
// editors and CI logs link straight to the spot, then names the flow when the
// statement got as far as its name.
type Error struct {
	Pos  Pos
	Flow string // the flow's (or materialized view's) name; "" when not known
	Msg  string
	// View: the statement is a materialized view, not a flow.
	View bool
}

func (e *Error) Error() string {
	switch {
	case e.Flow == "":
		return e.Pos.String() + ": " + e.Msg
	case e.View:
		return e.Pos.String() + ": materialized view " + e.Flow + ": " + e.Msg
	}
	return e.Pos.String() + ": flow " + e.Flow + ": " + e.Msg
}

func errorf(p Pos, format string, args ...any) *Error {
	return &Error{Pos: p, Msg: fmt.Sprintf(format, args...)}
}

// ErrorList holds every error found in a set of files.
type ErrorList []*Error

func (l ErrorList) Error() string {
	parts := make([]string, len(l))
	for i, e := range l {
		parts[i] = e.Error()
	}
	return strings.Join(parts, "\n")
}

// Unwrap exposes each error, so errors.As finds a *Error in a list (and in
// an errors.Join of lists).
func (l ErrorList) Unwrap() []error {
	out := make([]error, len(l))
	for i, e := range l {
		out[i] = e
	}
	return out
}

// Err returns nil for an empty list, so callers can return it directly.
func (l ErrorList) Err() error {
	if len(l) == 0 {
		return nil
	}
	return l
}

type tokenKind int

const (
	tokEOF tokenKind = iota
	tokIdent
	tokQuoted // `backquoted identifier`
	tokString // 'text' or "text"; Text holds the decoded value
	tokNumber
	tokPunct // operators and punctuation
	// tokInvalid is input the lexer could not read (an unterminated string,
	// a stray character); Text holds the message. The lexer carries on after
	// it, so a typo refuses only the statement that holds it.
	tokInvalid
)

type token struct {
	Kind tokenKind
	Text string
	Pos  Pos
}

func (t token) is(kw string) bool { return t.Kind == tokIdent && strings.EqualFold(t.Text, kw) }

func (t token) describe() string {
	switch t.Kind {
	case tokEOF:
		return "end of file"
	case tokString:
		return fmt.Sprintf("string %q", t.Text)
	case tokQuoted:
		return "`" + t.Text + "`"
	case tokInvalid:
		return "invalid input"
	}
	return fmt.Sprintf("%q", t.Text)
}

type lexer struct {
	src       string
	file      string
	off       int
	line, col int
	tokStart  int // offset of the token being read
	toks      []token
}

// lex splits a flow file into tokens, dropping whitespace and comments
// (-- to end of line, # to end of line, /* ... */). It never fails: what it
// cannot read becomes a tokInvalid, which the parser reports for the one
// statement holding it.
func lex(file, src string) []token {
	// Flow text averages a token per 5 to 6 bytes; sizing the slice
	// up front saves regrowing it (and copying every token) as it fills.
	lx := &lexer{src: src, file: file, line: 1, col: 1, toks: make([]token, 0, min(len(src)/5+1, MaxTokens+2))}
	// A byte-order mark (editors on Windows write one) is not text.
	if strings.HasPrefix(src, "\ufeff") {
		lx.off = len("\ufeff")
	}
	depth := 0 // of parentheses, within the statement
	for {
		lx.skipSpaceAndComments()
		if lx.off >= len(lx.src) {
			lx.toks = append(lx.toks, token{Kind: tokEOF, Pos: lx.pos()})
			return lx.toks
		}
		if len(lx.toks) >= MaxTokens {
			lx.toks = append(lx.toks, token{Kind: tokInvalid, Pos: lx.pos(),
				Text: fmt.Sprintf("more than %d tokens in one file: the rest is not read (split the file)", MaxTokens)},
				token{Kind: tokEOF, Pos: lx.pos()})
			return lx.toks
		}
		if err := lx.next(); err != nil {
			lx.toks = append(lx.toks, token{Kind: tokInvalid, Text: err.Msg, Pos: err.Pos})
			continue
		}
		switch t := lx.toks[len(lx.toks)-1]; {
		case t.Kind != tokPunct:
		case t.Text == ";":
			depth = 0
		case t.Text == "(":
			if depth++; depth > MaxNesting {
				// Refused here, before the rest of the statement becomes
				// tokens: a million nested parentheses took ~700 MB.
				lx.toks[len(lx.toks)-1] = token{Kind: tokInvalid, Pos: t.Pos,
					Text: fmt.Sprintf("parentheses nested deeper than %d: simplify the expression", MaxNesting)}
				lx.skipStatement()
				depth = 0
			}
		case t.Text == ")":
			depth = max(0, depth-1)
		}
	}
}

// MaxNesting bounds how deep parentheses nest in a statement (BigQuery
// refuses far shallower expressions than memory would allow).
const MaxNesting = 256

// skipStatement moves to the ';' that ends the statement (or the end of
// the file), making no tokens.
func (lx *lexer) skipStatement() {
	for lx.off < len(lx.src) && lx.peek(0) != ';' {
		lx.advance()
	}
}

func (lx *lexer) pos() Pos { return Pos{File: lx.file, Line: lx.line, Col: lx.col} }

func (lx *lexer) peek(n int) rune {
	off := lx.off
	for i := 0; i < n; i++ {
		if off >= len(lx.src) {
			return 0
		}
		_, w := utf8.DecodeRuneInString(lx.src[off:])
		off += w
	}
	if off >= len(lx.src) {
		return 0
	}
	r, _ := utf8.DecodeRuneInString(lx.src[off:])
	return r
}

func (lx *lexer) advance() rune {
	r, w := utf8.DecodeRuneInString(lx.src[lx.off:])
	lx.off += w
	if r == '\n' {
		lx.line++
		lx.col = 1
	} else {
		lx.col++
	}
	return r
}

func (lx *lexer) skipSpaceAndComments() {
	for lx.off < len(lx.src) {
		r := lx.peek(0)
		switch {
		case unicode.IsSpace(r):
			lx.advance()
		case r == '-' && lx.peek(1) == '-', r == '#':
			for lx.off < len(lx.src) && lx.peek(0) != '\n' {
				lx.advance()
			}
		case r == '/' && lx.peek(1) == '*':
			start := lx.pos()
			lx.advance()
			lx.advance()
			for lx.off < len(lx.src) && !(lx.peek(0) == '*' && lx.peek(1) == '/') {
				lx.advance()
			}
			if lx.off >= len(lx.src) {
				// Silently dropping the rest of the file would drop its flows.
				lx.toks = append(lx.toks, token{Kind: tokInvalid, Text: "unterminated /* comment: every flow after it is lost; close it with */", Pos: start})
				return
			}
			lx.advance()
			lx.advance()
		default:
			return
		}
	}
}

func isIdentStart(r rune) bool { return r == '_' || unicode.IsLetter(r) }
func isIdentPart(r rune) bool  { return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) }

func (lx *lexer) next() *Error {
	start := lx.pos()
	lx.tokStart = lx.off
	r := lx.peek(0)
	emit := func(k tokenKind, text string) { lx.toks = append(lx.toks, token{Kind: k, Text: text, Pos: start}) }
	switch {
	case isIdentStart(r):
		// An identifier is its source text: slice it rather than copy it.
		for lx.off < len(lx.src) && isIdentPart(lx.peek(0)) {
			lx.advance()
		}
		emit(tokIdent, lx.src[lx.tokStart:lx.off])
	case unicode.IsDigit(r) || (r == '.' && unicode.IsDigit(lx.peek(1))):
		var b strings.Builder
		for lx.off < len(lx.src) {
			c := lx.peek(0)
			if !(unicode.IsDigit(c) || c == '.' || c == 'e' || c == 'E' ||
				((c == '+' || c == '-') && (b.Len() > 0 && strings.ContainsAny(b.String()[b.Len()-1:], "eE")))) {
				break
			}
			b.WriteRune(lx.advance())
		}
		emit(tokNumber, b.String())
	case r == '`':
		lx.advance()
		var b strings.Builder
		for {
			if lx.off >= len(lx.src) || lx.peek(0) == '\n' {
				lx.resume(start)
				return errorf(start, "unterminated `quoted identifier`")
			}
			c := lx.advance()
			if c == '`' {
				break
			}
			b.WriteRune(c)
		}
		if b.Len() == 0 {
			return errorf(start, "empty `quoted identifier`")
		}
		emit(tokQuoted, b.String())
	case r == '\'' || r == '"':
		s, err := lx.stringLit(start)
		if err != nil {
			return err
		}
		emit(tokString, s)
	default:
		// "==" and "<=>" are Spark SQL (Databricks conditions use them);
		// renderExpr turns them into BigQuery's "=" and IS NOT DISTINCT FROM.
		for _, op := range []string{"<=>", "<=", ">=", "<>", "!=", "||", "=="} {
			if strings.HasPrefix(lx.src[lx.off:], op) {
				for range op {
					lx.advance()
				}
				emit(tokPunct, op)
				return nil
			}
		}
		if strings.ContainsRune("(),;*=<>+-/.[]", r) {
			lx.advance()
			emit(tokPunct, string(r))
			return nil
		}
		lx.advance()
		return errorf(start, "unexpected character %q", r)
	}
	return nil
}

// resume goes back to just after the opening quote of the token that
// started at start, a quote that is never closed: what follows lexes as
// written, so the ';' ending the statement still ends it and only that
// statement is refused.
func (lx *lexer) resume(start Pos) {
	lx.off, lx.line, lx.col = lx.tokStart, start.Line, start.Col
	lx.advance()
}

// stringLit reads a single- or double-quoted string with BigQuery's
// backslash escapes and returns its decoded value. After a bad escape it
// reads on to the closing quote, so what follows lexes as written.
func (lx *lexer) stringLit(start Pos) (string, *Error) {
	quote := lx.advance()
	var b strings.Builder
	var bad *Error
	for {
		if lx.off >= len(lx.src) || lx.peek(0) == '\n' {
			lx.resume(start)
			return "", errorf(start, "unterminated string")
		}
		c := lx.advance()
		switch {
		case c == quote:
			if bad != nil {
				return "", bad
			}
			return b.String(), nil
		case c == '\\':
			if lx.off >= len(lx.src) {
				lx.resume(start)
				return "", errorf(start, "unterminated string")
			}
			at := lx.pos()
			e := lx.advance()
			switch e {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'r':
				b.WriteByte('\r')
			case '\\', '\'', '"', '`', '?':
				b.WriteRune(e)
			default:
				if bad == nil {
					bad = errorf(at, "unsupported escape \\%c in string", e)
				}
			}
		default:
			b.WriteRune(c)
		}
	}
}

// Errorf is an error at p, for checks made outside this package (the
// object names package catalog derives from a flow).
func Errorf(p Pos, format string, args ...any) *Error { return errorf(p, format, args...) }
