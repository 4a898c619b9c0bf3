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

func (p Pos) String() string { return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Col) }

// Error is a flow error at a position. Its text leads with file:line:column so
// editors and CI logs link straight to the spot.
type Error struct {
	Pos Pos
	Msg string
}

func (e *Error) Error() string { return e.Pos.String() + ": " + e.Msg }

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
	}
	return fmt.Sprintf("%q", t.Text)
}

type lexer struct {
	src       string
	file      string
	off       int
	line, col int
	toks      []token
}

// lex splits a flow file into tokens, dropping whitespace and comments
// (-- to end of line, # to end of line, /* ... */).
func lex(file, src string) ([]token, error) {
	lx := &lexer{src: src, file: file, line: 1, col: 1}
	for {
		lx.skipSpaceAndComments()
		if lx.off >= len(lx.src) {
			lx.toks = append(lx.toks, token{Kind: tokEOF, Pos: lx.pos()})
			return lx.toks, nil
		}
		if err := lx.next(); err != nil {
			return nil, err
		}
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
			lx.advance()
			lx.advance()
			for lx.off < len(lx.src) && !(lx.peek(0) == '*' && lx.peek(1) == '/') {
				lx.advance()
			}
			if lx.off < len(lx.src) {
				lx.advance()
				lx.advance()
			}
		default:
			return
		}
	}
}

func isIdentStart(r rune) bool { return r == '_' || unicode.IsLetter(r) }
func isIdentPart(r rune) bool  { return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) }

func (lx *lexer) next() error {
	start := lx.pos()
	r := lx.peek(0)
	emit := func(k tokenKind, text string) { lx.toks = append(lx.toks, token{Kind: k, Text: text, Pos: start}) }
	switch {
	case isIdentStart(r):
		var b strings.Builder
		for lx.off < len(lx.src) && isIdentPart(lx.peek(0)) {
			b.WriteRune(lx.advance())
		}
		emit(tokIdent, b.String())
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
		for _, op := range []string{"<=", ">=", "<>", "!=", "||"} {
			if strings.HasPrefix(lx.src[lx.off:], op) {
				lx.advance()
				lx.advance()
				emit(tokPunct, op)
				return nil
			}
		}
		if strings.ContainsRune("(),;*=<>+-/.[]", r) {
			lx.advance()
			emit(tokPunct, string(r))
			return nil
		}
		return errorf(start, "unexpected character %q", r)
	}
	return nil
}

// stringLit reads a single- or double-quoted string with BigQuery's
// backslash escapes and returns its decoded value.
func (lx *lexer) stringLit(start Pos) (string, error) {
	quote := lx.advance()
	var b strings.Builder
	for {
		if lx.off >= len(lx.src) || lx.peek(0) == '\n' {
			return "", errorf(start, "unterminated string")
		}
		c := lx.advance()
		switch {
		case c == quote:
			return b.String(), nil
		case c == '\\':
			if lx.off >= len(lx.src) {
				return "", errorf(start, "unterminated string")
			}
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
				return "", errorf(lx.pos(), "unsupported escape \\%c in string", e)
			}
		default:
			b.WriteRune(c)
		}
	}
}
