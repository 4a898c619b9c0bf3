package fakebq

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"cloud.google.com/go/bigquery"
)

// What a DDL job does to the fake's objects. The fake runs no SQL, but a
// deployment's order is only tested if the objects its statements make
// exist afterwards and the objects they name must exist before, as in
// BigQuery:
//
//   - CREATE [OR REPLACE] TABLE|VIEW|MATERIALIZED VIEW [IF NOT EXISTS] t
//     makes table t (no schema: the fake derives none from a query; a
//     replaced table loses its labels and description, as CREATE OR
//     REPLACE does in BigQuery); without OR REPLACE or IF NOT EXISTS an
//     existing t is a 409;
//   - CREATE [OR REPLACE] TABLE FUNCTION f makes routine f;
//   - DROP TABLE [IF EXISTS] t removes t (without IF EXISTS a missing t
//     is a 404); INSERT INTO t needs t;
//   - every object a statement names (a fully qualified, back-quoted
//     `project`.`dataset`.`name`, outside strings and comments) must exist
//     when it runs, as a table, a view or a routine: BigQuery checks a
//     view's, a function's and a query's references when it analyses the
//     statement, and answers 404 "Not found" otherwise. The same holds for
//     a view made through tables.insert (insertTable).
//
// A script's statements take effect in order, each seeing the ones before
// it; one that fails stops the script, the ones before it stay (BigQuery
// scripts are not transactions either).

// ddlEffect is what one statement does.
type ddlEffect struct {
	verb        string // "CREATE", "DROP", "INSERT"
	routine     bool   // CREATE TABLE FUNCTION
	isView      bool   // CREATE VIEW or MATERIALIZED VIEW
	view        string // its query
	path        string // the object it makes, drops or writes ("" if none it names)
	orReplace   bool
	ifNotExists bool
	ifExists    bool
}

// parseDDL reads the effect of stmt (a statement ddlLike accepted); the
// project is the job's, for names given without one.
func parseDDL(stmt, project string) (ddlEffect, error) {
	toks := sqlWords(stmt, 12)
	var e ddlEffect
	next := func(words ...string) bool {
		if len(toks) >= len(words) {
			for i, w := range words {
				if !strings.EqualFold(toks[i], w) {
					return false
				}
			}
			toks = toks[len(words):]
			return true
		}
		return false
	}
	switch {
	case next("CREATE"):
		e.verb = "CREATE"
		e.orReplace = next("OR", "REPLACE")
		switch {
		case next("TABLE", "FUNCTION"):
			e.routine = true
		case next("TABLE"):
		case next("VIEW"), next("MATERIALIZED", "VIEW"):
			e.isView = true
		default:
			return e, fmt.Errorf("fakebq: CREATE of what? %s", firstLine(stmt))
		}
		e.ifNotExists = next("IF", "NOT", "EXISTS")
	case next("DROP", "TABLE"):
		e.verb = "DROP"
		e.ifExists = next("IF", "EXISTS")
	case next("INSERT", "INTO"), next("INSERT"):
		e.verb = "INSERT"
	default:
		return e, fmt.Errorf("fakebq: not DDL: %s", firstLine(stmt))
	}
	if len(toks) == 0 {
		return e, fmt.Errorf("fakebq: no object named: %s", firstLine(stmt))
	}
	p, ok := objectPath(toks[0], project)
	if !ok {
		return e, fmt.Errorf("fakebq: cannot read the object name %q", toks[0])
	}
	e.path = p
	if e.isView {
		// The query follows the first AS after the name (OPTIONS and
		// column lists hold none as a word of their own).
		e.view = stmt
		if i := strings.Index(strings.ToUpper(stmt), "\nAS\n"); i >= 0 {
			e.view = strings.TrimSpace(stmt[i+4:])
		} else if i := strings.Index(strings.ToUpper(stmt), " AS "); i >= 0 {
			e.view = strings.TrimSpace(stmt[i+4:])
		}
	}
	return e, nil
}

// sqlWords splits the start of stmt into up to n words: runs of
// characters up to white space or '(' (a back-quoted name with its dots is
// one word).
func sqlWords(stmt string, n int) []string {
	var out []string
	i := 0
	for len(out) < n && i < len(stmt) {
		for i < len(stmt) && (stmt[i] == ' ' || stmt[i] == '\n' || stmt[i] == '\t' || stmt[i] == '\r') {
			i++
		}
		start := i
		for i < len(stmt) && stmt[i] != ' ' && stmt[i] != '\n' && stmt[i] != '\t' && stmt[i] != '\r' && stmt[i] != '(' {
			if stmt[i] == '`' {
				if j := strings.IndexByte(stmt[i+1:], '`'); j >= 0 {
					i += j + 1
				}
			}
			i++
		}
		if i == start {
			break
		}
		out = append(out, stmt[start:i])
	}
	return out
}

// objectPath reads a name as a statement writes it (`p`.`d`.`t`,
// `p.d.t`, d.t) as the fake's path of a table, or of a routine: both
// share a namespace in the fake, as a routine and a table of one name
// cannot be told apart in a reference.
func objectPath(name, project string) (string, bool) {
	parts := splitName(name)
	switch len(parts) {
	case 2:
		return tablePath(project, parts[0], parts[1]), true
	case 3:
		return tablePath(parts[0], parts[1], parts[2]), true
	}
	return "", false
}

// splitName splits a possibly back-quoted dotted name into its parts (a
// dot splits inside quotes too: `p.d.t` is BigQuery's spelling of
// `p`.`d`.`t`, and no dataset or table name holds one).
func splitName(name string) []string {
	var parts []string
	var cur strings.Builder
	quoted := false
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c == '`':
			quoted = !quoted
		case c == '\\' && quoted && i+1 < len(name):
			i++
			cur.WriteByte(name[i])
		case c == '.':
			parts = append(parts, cur.String())
			cur.Reset()
		default:
			cur.WriteByte(c)
		}
	}
	return append(parts, cur.String())
}

// references lists the fully qualified, back-quoted names sql holds outside
// strings and comments (`p`.`d`.`t` or `p.d.t`), as the fake's paths.
func references(sql string) []string {
	var out []string
	seen := map[string]bool{}
	for i := 0; i < len(sql); {
		switch c := sql[i]; {
		case c == '\'' || c == '"':
			i = skipString(sql, i)
		case c == '#' || (c == '-' && strings.HasPrefix(sql[i:], "--")):
			if j := strings.IndexByte(sql[i:], '\n'); j >= 0 {
				i += j + 1
			} else {
				i = len(sql)
			}
		case c == '/' && strings.HasPrefix(sql[i:], "/*"):
			if j := strings.Index(sql[i+2:], "*/"); j >= 0 {
				i += j + 4
			} else {
				i = len(sql)
			}
		case c == '`':
			start := i
			for i < len(sql) && sql[i] == '`' {
				j := strings.IndexByte(sql[i+1:], '`')
				if j < 0 {
					return out
				}
				i += j + 2
				if i < len(sql) && sql[i] == '.' && i+1 < len(sql) && sql[i+1] == '`' {
					i++
					continue
				}
				break
			}
			if parts := splitName(sql[start:i]); len(parts) == 3 {
				p := tablePath(parts[0], parts[1], parts[2])
				if !seen[p] {
					seen[p] = true
					out = append(out, p)
				}
			}
		default:
			i++
		}
	}
	return out
}

// skipString returns the index after the string literal starting at i
// (quoted by sql[i], possibly tripled; backslash escapes).
func skipString(sql string, i int) int {
	q := sql[i]
	if strings.HasPrefix(sql[i:], strings.Repeat(string(q), 3)) {
		if j := strings.Index(sql[i+3:], strings.Repeat(string(q), 3)); j >= 0 {
			return i + 3 + j + 3
		}
		return len(sql)
	}
	for j := i + 1; j < len(sql); j++ {
		switch sql[j] {
		case '\\':
			j++
		case q:
			return j + 1
		}
	}
	return len(sql)
}

// missingReference returns the first object sql names that does not exist
// (but self, the object the statement makes), as BigQuery's 404 message
// says it; "" when all exist. The caller holds s.mu.
func (s *Server) missingReference(sql, self string) string {
	for _, p := range references(sql) {
		if p == self || s.tables[p] != nil || s.routines[p] {
			continue
		}
		project, dataset, name := pathParts(p)
		return fmt.Sprintf("Not found: Table %s:%s.%s was not found in location US", project, dataset, name)
	}
	return ""
}

// pathParts splits a path tablePath made.
func pathParts(p string) (project, dataset, name string) {
	parts := strings.Split(p, "/")
	return parts[1], parts[3], parts[5]
}

// ddlError is a statement's failure, as BigQuery would answer it.
type ddlError struct {
	code   int
	reason string
	msg    string
}

// runDDL applies the effects of a job's statements in order; the caller
// holds s.mu.
func (s *Server) runDDL(stmts []string, project string) *ddlError {
	for _, stmt := range stmts {
		stmt = withoutLeadingComments(stmt)
		e, err := parseDDL(stmt, project)
		if err != nil {
			return &ddlError{http.StatusBadRequest, "invalid", err.Error()}
		}
		if msg := s.missingReference(stmt, e.path); msg != "" {
			return &ddlError{http.StatusNotFound, "notFound", msg}
		}
		exists := s.tables[e.path] != nil || s.routines[e.path]
		p, ds, name := pathParts(e.path)
		switch e.verb {
		case "INSERT":
			if s.tables[e.path] == nil {
				return &ddlError{http.StatusNotFound, "notFound", fmt.Sprintf("Not found: Table %s:%s.%s", p, ds, name)}
			}
		case "DROP":
			if s.tables[e.path] == nil {
				if e.ifExists {
					continue
				}
				return &ddlError{http.StatusNotFound, "notFound", fmt.Sprintf("Not found: Table %s:%s.%s", p, ds, name)}
			}
			delete(s.tables, e.path)
		case "CREATE":
			if !s.datasets[p+"/"+ds] && !s.hasDatasetLocked(p, ds) {
				return &ddlError{http.StatusNotFound, "notFound", fmt.Sprintf("Not found: Dataset %s:%s", p, ds)}
			}
			if exists && e.ifNotExists {
				continue
			}
			if exists && !e.orReplace {
				return &ddlError{http.StatusConflict, "duplicate", fmt.Sprintf("Already Exists: %s:%s.%s", p, ds, name)}
			}
			if e.routine {
				if s.tables[e.path] != nil {
					return &ddlError{http.StatusConflict, "duplicate", fmt.Sprintf("Already Exists: Table %s:%s.%s (a routine cannot take its name)", p, ds, name)}
				}
				if s.routines == nil {
					s.routines = map[string]bool{}
				}
				s.routines[e.path] = true
				continue
			}
			if s.routines[e.path] {
				return &ddlError{http.StatusConflict, "duplicate", fmt.Sprintf("Already Exists: Routine %s:%s.%s (a table cannot take its name)", p, ds, name)}
			}
			t := &table{path: e.path, project: p, dataset: ds, name: name, created: time.Now()}
			if err := t.set(Table{Schema: bigquery.Schema{}, ViewQuery: e.view}); err != nil {
				return &ddlError{http.StatusBadRequest, "invalid", err.Error()}
			}
			s.tables[e.path] = t
		}
	}
	return nil
}
