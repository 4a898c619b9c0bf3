package emulator

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// quietComments replaces the quote characters inside SQL comments (--, #
// and /* */) with typographic ones (concession 17). The emulator rewrites
// query text before analysing it with scanners that take a quote in a
// comment ("the key's events") for the start of a string literal; past an
// odd number of them its rewrites act on the wrong text, and a valid
// statement fails ("Window ORDER BY is required for analytic function
// lead") or, we believe, runs as another one. Quotes in string literals
// and quoted identifiers are left as they are.
func quietComments(sql string) string {
	if !strings.ContainsAny(sql, "-#/") {
		return sql
	}
	var b strings.Builder
	b.Grow(len(sql) + 16)
	quiet := func(comment string) {
		for _, r := range comment {
			switch r {
			case '\'':
				b.WriteRune('’')
			case '"':
				b.WriteRune('”')
			case '`':
				b.WriteRune('‘')
			default:
				b.WriteRune(r)
			}
		}
	}
	for i := 0; i < len(sql); {
		c := sql[i]
		switch {
		case c == '\'' || c == '"' || c == '`':
			end := literalEnd(sql, i)
			b.WriteString(sql[i:end])
			i = end
		case c == '#' || c == '-' && strings.HasPrefix(sql[i:], "--"):
			end := strings.IndexByte(sql[i:], '\n')
			if end < 0 {
				end = len(sql) - i
			}
			quiet(sql[i : i+end])
			i += end
		case c == '/' && strings.HasPrefix(sql[i:], "/*"):
			end := strings.Index(sql[i+2:], "*/")
			if end < 0 {
				end = len(sql) - i - 2
			} else {
				end += 2
			}
			quiet(sql[i : i+2+end])
			i += 2 + end
		default:
			b.WriteByte(c)
			i++
		}
	}
	return b.String()
}

// literalEnd is the index after the string literal or quoted identifier
// starting at i: '...', "...", ”'...”', """...""" (backslash escapes)
// or `...`.
func literalEnd(sql string, i int) int {
	q := sql[i]
	if q != '`' && strings.HasPrefix(sql[i:], strings.Repeat(string(q), 3)) {
		if end := strings.Index(sql[i+3:], strings.Repeat(string(q), 3)); end >= 0 {
			return i + 3 + end + 3
		}
		return len(sql)
	}
	for j := i + 1; j < len(sql); j++ {
		switch sql[j] {
		case '\\':
			if q != '`' {
				j++
			}
		case q:
			return j + 1
		}
	}
	return len(sql)
}

// quietRequestComments applies quietComments to the SQL a request carries:
// a query (jobs.query, jobs.insert) or a view's definition (tables.insert,
// patch, update).
func quietRequestComments(r *http.Request) error {
	if r.Body == nil {
		return nil
	}
	query := queryPath.MatchString(r.URL.Path) && methodOf(r) == http.MethodPost
	if !query && !tableWrite(r) {
		return nil
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return err
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	var req map[string]any
	if json.Unmarshal(body, &req) != nil {
		return nil
	}
	var holder map[string]any
	switch {
	case query && strings.HasSuffix(r.URL.Path, "/jobs"):
		cfg, _ := req["configuration"].(map[string]any)
		holder, _ = cfg["query"].(map[string]any)
	case query:
		holder = req
	default:
		holder, _ = req["view"].(map[string]any)
	}
	sql, _ := holder["query"].(string)
	quieted := quietComments(sql)
	if quieted == sql {
		return nil
	}
	holder["query"] = quieted
	out, err := json.Marshal(req)
	if err != nil {
		return err
	}
	r.Body = io.NopCloser(bytes.NewReader(out))
	r.ContentLength = int64(len(out))
	r.Header.Set("Content-Length", strconv.Itoa(len(out)))
	return nil
}
