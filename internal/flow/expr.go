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
	var out []string
	var fnStack []string // the function (or "") owning each open parenthesis
	toks := e.toks
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		next := token{}
		if i+1 < len(toks) {
			next = toks[i+1]
		}
		prev := token{}
		if i > 0 {
			prev = toks[i-1]
		}
		afterDot := prev.Kind == tokPunct && prev.Text == "."
		switch t.Kind {
		case tokString:
			out = append(out, QuoteString(t.Text))
		case tokNumber:
			if !numberLit.MatchString(t.Text) {
				return "", errorf(t.Pos, "malformed number %q in %s condition", t.Text, clause)
			}
			out = append(out, t.Text)
		case tokPunct:
			switch t.Text {
			case "(":
				fn := ""
				if prev.Kind == tokIdent {
					fn = strings.ToUpper(prev.Text)
				}
				fnStack = append(fnStack, fn)
			case ")":
				fnStack = fnStack[:len(fnStack)-1]
			case "==": // Spark SQL's equality, as Databricks conditions may write it
				out = append(out, "=")
				continue
			case "<=>": // Spark SQL's NULL-safe equality
				out = append(out, "IS NOT DISTINCT FROM")
				continue
			}
			out = append(out, t.Text)
		case tokQuoted:
			if afterDot {
				out = append(out, catalog.QuoteIdent(t.Text)) // a STRUCT field
				continue
			}
			c, ok := cols.Lookup(t.Text)
			if !ok {
				return "", unknownColumn(t, clause, cols, source)
			}
			refs[c.Name] = true
			out = append(out, catalog.QuoteIdent(c.Name))
		case tokIdent:
			upper := strings.ToUpper(t.Text)
			switch {
			case afterDot:
				if next.Kind == tokPunct && next.Text == "(" { // SAFE.FUNC(
					if !funcName.MatchString(t.Text) {
						return "", errorf(t.Pos, "invalid function name %q", t.Text)
					}
					out = append(out, upper)
				} else {
					out = append(out, catalog.QuoteIdent(t.Text)) // a STRUCT field
				}
			case next.Kind == tokPunct && next.Text == "(" && !exprKeywords[upper] || upper == "SAFE" && next.Text == ".":
				if forbidden[upper] {
					return "", notAnExpression(t, clause)
				}
				if !funcName.MatchString(t.Text) {
					return "", errorf(t.Pos, "invalid function name %q", t.Text)
				}
				out = append(out, upper)
			default:
				if c, ok := cols.Lookup(t.Text); ok && !reserved[upper] {
					refs[c.Name] = true
					out = append(out, catalog.QuoteIdent(c.Name))
					continue
				}
				if upper == "FROM" && (prev.is("DISTINCT") || insideExtract(fnStack)) {
					out = append(out, upper)
					continue
				}
				if forbidden[upper] || upper == "FROM" {
					return "", notAnExpression(t, clause)
				}
				if exprKeywords[upper] {
					out = append(out, upper)
					continue
				}
				return "", unknownColumn(t, clause, cols, source)
			}
		}
	}
	return joinSQL(out), nil
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
