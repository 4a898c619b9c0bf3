package flow

import (
	"regexp"
	"strings"

	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/schema"
	"github.com/bqcdc/bqcdc/internal/spelling"
)

// Conditions are BigQuery boolean expressions over changelog columns. They
// are not spliced into SQL as written: Bind re-renders them from tokens, so
// every column reference is resolved and `quoted`, every string literal is
// re-escaped, and anything that is not an expression (a subquery, a second
// statement, a query parameter) is refused with its position.

// exprKeywords may appear unquoted in a condition when no changelog column
// has the same name.
var exprKeywords = wordSet(`AND OR NOT IS NULL TRUE FALSE IN LIKE BETWEEN ESCAPE CASE WHEN THEN ELSE END
	AS DISTINCT INTERVAL UNNEST ARRAY STRUCT AT TIME ZONE RESPECT IGNORE NULLS
	DATE DATETIME TIMESTAMP NUMERIC BIGNUMERIC DECIMAL BIGDECIMAL JSON INT64 STRING BOOL BOOLEAN BYTES FLOAT64
	MICROSECOND MILLISECOND SECOND MINUTE HOUR DAY DAYOFWEEK DAYOFYEAR WEEK ISOWEEK MONTH QUARTER YEAR ISOYEAR`)

// reserved words can never be a column reference unless `quoted`.
var reserved = wordSet(`ALL AND ANY ARRAY AS ASC ASSERT_ROWS_MODIFIED AT BETWEEN BY CASE CAST COLLATE CONTAINS CREATE
	CROSS CUBE CURRENT DEFAULT DEFINE DESC DISTINCT ELSE END ENUM ESCAPE EXCEPT EXCLUDE EXISTS EXTRACT FALSE FETCH
	FOLLOWING FOR FROM FULL GROUP GROUPING GROUPS HASH HAVING IF IGNORE IN INNER INTERSECT INTERVAL INTO IS JOIN
	LATERAL LEFT LIKE LIMIT LOOKUP MERGE NATURAL NEW NO NOT NULL NULLS OF ON OR ORDER OUTER OVER PARTITION
	PRECEDING PROTO QUALIFY RANGE RECURSIVE RESPECT RIGHT ROLLUP ROWS SELECT SET SOME STRUCT TABLESAMPLE THEN TO
	TREAT TRUE UNBOUNDED UNION UNNEST USING WHEN WHERE WINDOW WITH WITHIN`)

// forbidden words would turn a condition into something other than an
// expression over one changelog row.
var forbidden = wordSet(`SELECT WITH UNION INTERSECT EXCEPT EXISTS INSERT UPDATE DELETE MERGE CREATE DROP ALTER
	TRUNCATE DECLARE SET BEGIN CALL EXECUTE GRANT REVOKE OVER WINDOW`)

func wordSet(s string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(s) {
		m[w] = true
	}
	return m
}

var (
	numberLit = regexp.MustCompile(`^([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?$`)
	funcName  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// The escaper is built once: a strings.Replacer compiles its lookup table
// on first use (catalog.QuoteIdent's says why that matters).
var stringEscaper = strings.NewReplacer("\\", "\\\\", "'", "\\'", "\n", "\\n", "\r", "\\r", "\t", "\\t")

// QuoteString renders a BigQuery string literal.
func QuoteString(s string) string {
	return "'" + stringEscaper.Replace(s) + "'"
}

// renderExpr resolves and re-renders a condition. cols are the changelog
// columns; refs collects the columns the condition reads.
func renderExpr(e *Expr, clause string, cols schema.Columns, source sourceRef, refs map[string]bool) (string, *Error) {
	// An expression that is one column is that column, even one named like
	// a reserved word (at, from): nothing else can be meant.
	if c, ok := soleColumn(e.toks, cols); ok {
		refs[c.Name] = true
		return catalog.QuoteIdent(c.Name), nil
	}
	w := &exprWriter{clause: clause, cols: cols, source: source, refs: refs}
	toks := e.toks
	for i, t := range toks {
		var prev, next token
		if i > 0 {
			prev = toks[i-1]
		}
		if i+1 < len(toks) {
			next = toks[i+1]
		}
		if err := w.token(t, prev, next); err != nil {
			return "", err
		}
	}
	return joinSQL(w.out), nil
}

// exprWriter writes a condition's tokens as BigQuery SQL (renderExpr).
type exprWriter struct {
	clause  string
	cols    schema.Columns
	source  sourceRef
	refs    map[string]bool // the columns it names
	out     []string
	fnStack []string // the function (or "") owning each open parenthesis
}

func (w *exprWriter) token(t, prev, next token) *Error {
	afterDot := prev.Kind == tokPunct && prev.Text == "."
	switch t.Kind {
	case tokString:
		w.out = append(w.out, QuoteString(t.Text))
	case tokNumber:
		if !numberLit.MatchString(t.Text) {
			return errorf(t.Pos, "malformed number %q in %s condition", t.Text, w.clause)
		}
		w.out = append(w.out, t.Text)
	case tokPunct:
		w.punct(t, prev)
	case tokQuoted:
		if afterDot {
			w.out = append(w.out, catalog.QuoteIdent(t.Text)) // a STRUCT field
			return nil
		}
		c, ok := w.cols.Lookup(t.Text)
		if !ok {
			return unknownColumn(t, w.clause, w.cols, w.source)
		}
		w.column(c.Name)
	case tokIdent:
		return w.ident(t, prev, next, afterDot)
	}
	return nil
}

func (w *exprWriter) column(name string) {
	w.refs[name] = true
	w.out = append(w.out, catalog.QuoteIdent(name))
}

func (w *exprWriter) punct(t, prev token) {
	switch t.Text {
	case "(":
		fn := ""
		if prev.Kind == tokIdent {
			fn = strings.ToUpper(prev.Text)
		}
		w.fnStack = append(w.fnStack, fn)
	case ")":
		w.fnStack = w.fnStack[:len(w.fnStack)-1]
	case "==": // Spark SQL's equality, as Databricks conditions may write it
		w.out = append(w.out, "=")
		return
	case "<=>": // Spark SQL's NULL-safe equality
		w.out = append(w.out, "IS NOT DISTINCT FROM")
		return
	}
	w.out = append(w.out, t.Text)
}

// ident writes a word: a function's name, a STRUCT field, a column or a
// keyword an expression may hold.
func (w *exprWriter) ident(t, prev, next token, afterDot bool) *Error {
	upper := strings.ToUpper(t.Text)
	call := next.Kind == tokPunct && next.Text == "("
	switch {
	case afterDot && call: // SAFE.FUNC(
		if !funcName.MatchString(t.Text) {
			return errorf(t.Pos, "invalid function name %q", t.Text)
		}
		w.out = append(w.out, upper)
	case afterDot:
		w.out = append(w.out, catalog.QuoteIdent(t.Text)) // a STRUCT field
	case call && !exprKeywords[upper] || upper == "SAFE" && next.Text == ".":
		if forbidden[upper] {
			return notAnExpression(t, w.clause)
		}
		if !funcName.MatchString(t.Text) {
			return errorf(t.Pos, "invalid function name %q", t.Text)
		}
		w.out = append(w.out, upper)
	default:
		if c, ok := w.cols.Lookup(t.Text); ok && !reserved[upper] {
			w.column(c.Name)
			return nil
		}
		if upper == "FROM" && (prev.is("DISTINCT") || insideExtract(w.fnStack)) {
			w.out = append(w.out, upper)
			return nil
		}
		if forbidden[upper] || upper == "FROM" {
			return notAnExpression(t, w.clause)
		}
		if exprKeywords[upper] {
			w.out = append(w.out, upper)
			return nil
		}
		return unknownColumn(t, w.clause, w.cols, w.source)
	}
	return nil
}

func insideExtract(stack []string) bool {
	return len(stack) > 0 && stack[len(stack)-1] == "EXTRACT"
}

func notAnExpression(t token, clause string) *Error {
	return errorf(t.Pos, "%s condition may not use %s: conditions are boolean expressions over one changelog row (no subqueries, statements or window functions)", clause, strings.ToUpper(t.Text))
}

func unknownColumn(t token, clause string, cols schema.Columns, source sourceRef) *Error {
	msg := "unknown column " + t.Text + " in " + clause + ": " + source.String() + " has " + listed(cols.Names())
	if s := suggest(t.Text, cols.Names()); s != "" {
		msg += " (did you mean " + s + "?)"
	}
	return errorf(t.Pos, "%s", msg)
}

// joinSQL joins tokens with single spaces, except around ( ) , . [ ].
func joinSQL(toks []string) string {
	var b strings.Builder
	for i, t := range toks {
		if i > 0 {
			p := toks[i-1]
			tight := p == "(" || p == "." || p == "[" || t == ")" || t == "," || t == "." || t == "]" || t == "[" ||
				(t == "(" && p != "," && !isOperator(p) && !strings.EqualFold(p, "IN") && !strings.EqualFold(p, "AND") &&
					!strings.EqualFold(p, "OR") && !strings.EqualFold(p, "NOT") && !strings.EqualFold(p, "WHEN") &&
					!strings.EqualFold(p, "THEN") && !strings.EqualFold(p, "ELSE"))
			if !tight {
				b.WriteByte(' ')
			}
		}
		b.WriteString(t)
	}
	return b.String()
}

func isOperator(s string) bool {
	switch s {
	case "=", "<", ">", "<=", ">=", "<>", "!=", "+", "-", "*", "/", "||":
		return true
	}
	return false
}

// suggest returns the closest name by edit distance, if close enough.
func suggest(name string, names []string) string { return spelling.Nearest(name, names) }
