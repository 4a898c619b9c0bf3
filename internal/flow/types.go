package flow

import (
	"strings"

	"github.com/bqcdc/bqcdc/internal/schema"
)

// Conditions (WHERE, APPLY AS DELETE WHEN, APPLY AS TRUNCATE WHEN, a
// materialized view's HAVING) must be BOOL. BigQuery would say so only at
// apply, after other objects were made; bqcdc types each condition when
// the flow is bound, against the changelog's (or the view's) columns.
//
// The typer is shallow on purpose: it decides the type of the condition's
// top level where the SQL says it plainly, and leaves the rest to BigQuery
// (an expression it cannot type is accepted):
//
//   - a comparison, AND, OR, NOT, IS, IN, BETWEEN, LIKE or EXISTS at the top
//     level makes a BOOL;
//   - else arithmetic (+ - * / ||) at the top level makes a
//     number, a string or bytes (never a BOOL);
//   - else one column is its type, one literal its own (a string, a
//     number, TRUE, FALSE; NULL is any type);
//   - a parenthesized condition is typed inside;
//   - CAST(x AS t) is t; a function bqcdc knows is its result type.
//
// condType returns the type ("" when it cannot tell).

// boolWords are the top-level words that make a condition a BOOL.
var boolWords = wordSet("AND OR NOT IS IN BETWEEN LIKE EXISTS")

// boolOps are the comparison operators.
var boolOps = wordSet("= == != <> < > <= >= <=>")

// arithmeticOps make a number, a string or bytes.
var arithmeticOps = wordSet("+ - * / ||")

// funcTypes are the result types of functions a condition may plainly
// mistake for one (BOOL ones, and common ones that are not).
var funcTypes = map[string]string{
	"STARTS_WITH": schema.Bool, "ENDS_WITH": schema.Bool, "REGEXP_CONTAINS": schema.Bool, "CONTAINS_SUBSTR": schema.Bool,
	"IS_NAN": schema.Bool, "IS_INF": schema.Bool, "LOGICAL_AND": schema.Bool, "LOGICAL_OR": schema.Bool,
	"ST_CONTAINS": schema.Bool, "ST_INTERSECTS": schema.Bool, "ST_EQUALS": schema.Bool, "ST_WITHIN": schema.Bool,
	"LOWER": schema.String, "UPPER": schema.String, "TRIM": schema.String, "LTRIM": schema.String, "RTRIM": schema.String,
	"CONCAT": schema.String, "SUBSTR": schema.String, "SUBSTRING": schema.String, "REPLACE": schema.String,
	"FORMAT": schema.String, "TO_JSON_STRING": schema.String, "JSON_VALUE": schema.String, "JSON_EXTRACT_SCALAR": schema.String,
	"LENGTH": schema.Int64, "CHAR_LENGTH": schema.Int64, "BYTE_LENGTH": schema.Int64, "ARRAY_LENGTH": schema.Int64,
	"STRPOS": schema.Int64, "MOD": schema.Int64, "DIV": schema.Int64, "COUNT": schema.Int64, "SIGN": schema.Int64,
	"CURRENT_TIMESTAMP": schema.Timestamp, "CURRENT_DATE": schema.Date, "DATE": schema.Date, "TIMESTAMP": schema.Timestamp,
}

// numeric are the functions whose result is a number (never a BOOL) though
// funcTypes cannot name which.
var numeric = wordSet("ABS ROUND FLOOR CEIL SUM MIN MAX")

// checkBool refuses a condition whose type is known and is not BOOL, at
// its position, naming the type found.
func checkBool(e *Expr, clause string, cols schema.Columns) *Error {
	t := condType(e.toks, cols)
	if t == "" || t == schema.Bool {
		return nil
	}
	return errorf(e.Pos, "%s needs a BOOL condition, found %s: compare it (for example %s = ...)", clause, t, joinText(e.toks))
}

// joinText is an expression as written, shortened for an error.
func joinText(toks []token) string {
	parts := make([]string, 0, len(toks))
	for _, t := range toks {
		if t.Kind == tokString {
			parts = append(parts, QuoteString(t.Text))
		} else {
			parts = append(parts, t.Text)
		}
	}
	s := joinSQL(parts)
	if len(s) > 60 {
		s = s[:57] + "..."
	}
	return s
}

// condType is the type of the expression toks ("" when unknown).
func condType(toks []token, cols schema.Columns) string {
	if len(toks) == 0 {
		return ""
	}
	arith := false
	depth := 0
	for i, t := range toks {
		if t.Kind == tokPunct {
			switch {
			case t.Text == "(":
				depth++
			case t.Text == ")":
				depth--
			case depth == 0 && boolOps[t.Text]:
				return schema.Bool
			case depth == 0 && arithmeticOps[t.Text] && !(i == 0 && t.Text == "-"):
				arith = true
			}
			continue
		}
		if depth == 0 && t.Kind == tokIdent && boolWords[strings.ToUpper(t.Text)] {
			return schema.Bool
		}
	}
	if arith {
		return arithmeticType(toks, cols)
	}
	first := toks[0]
	switch {
	case len(toks) == 1:
		return atomType(first, cols)
	case first.Kind == tokPunct && first.Text == "(" && closes(toks, 0) == len(toks)-1:
		return condType(toks[1:len(toks)-1], cols)
	case first.Kind == tokPunct && first.Text == "-" && len(toks) == 2 && toks[1].Kind == tokNumber:
		return numberType(toks[1].Text)
	case first.Kind == tokIdent && len(toks) >= 3 && toks[1].Kind == tokPunct && toks[1].Text == "(" && closes(toks, 1) == len(toks)-1:
		return callType(strings.ToUpper(first.Text), toks[2:len(toks)-1])
	}
	return ""
}

// arithmeticType is the type arithmetic makes: a string for ||, else a
// number (INT64 when every operand is an INT64 column or an integer).
func arithmeticType(toks []token, cols schema.Columns) string {
	for _, t := range toks {
		if t.Kind == tokPunct && t.Text == "||" {
			return schema.String
		}
	}
	for _, t := range toks {
		switch t.Kind {
		case tokNumber:
			if numberType(t.Text) != schema.Int64 {
				return "a number"
			}
		case tokIdent, tokQuoted:
			if c, ok := cols.Lookup(t.Text); !ok || c.Type != schema.Int64 {
				return "a number"
			}
		}
	}
	return schema.Int64
}

// atomType is the type of one token: a column, a literal.
func atomType(t token, cols schema.Columns) string {
	switch t.Kind {
	case tokString:
		return schema.String
	case tokNumber:
		return numberType(t.Text)
	case tokIdent, tokQuoted:
		switch strings.ToUpper(t.Text) {
		case "TRUE", "FALSE":
			if t.Kind == tokIdent {
				return schema.Bool
			}
		case "NULL":
			if t.Kind == tokIdent {
				return "" // NULL is a BOOL as well as anything
			}
		}
		if c, ok := cols.Lookup(t.Text); ok {
			return c.SQLType()
		}
	}
	return ""
}

// callType is the type of a call of fn with the argument tokens args.
func callType(fn string, args []token) string {
	if fn == "CAST" || fn == "SAFE_CAST" {
		// CAST(x AS t): t, when it is one word.
		for i := len(args) - 2; i >= 0; i-- {
			if args[i].is("AS") && i == len(args)-2 && args[i+1].Kind == tokIdent {
				return strings.ToUpper(args[i+1].Text)
			}
		}
		return ""
	}
	if numeric[fn] {
		return "a number"
	}
	return funcTypes[fn]
}

// numberType is INT64 for an integer literal, FLOAT64 otherwise.
func numberType(text string) string {
	if strings.ContainsAny(text, ".eE") && !strings.HasPrefix(strings.ToLower(text), "0x") {
		return schema.Float64
	}
	return schema.Int64
}

// closes returns the index of the ')' closing the '(' at toks[open] (-1
// when none does).
func closes(toks []token, open int) int {
	depth := 0
	for j := open; j < len(toks); j++ {
		if toks[j].Kind != tokPunct {
			continue
		}
		switch toks[j].Text {
		case "(":
			depth++
		case ")":
			if depth--; depth == 0 {
				return j
			}
		}
	}
	return -1
}
