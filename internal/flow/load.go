package flow

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// Loading flow files yields the flows that can run and one error per flow
// that cannot (a statement that does not parse, a duplicate name or target,
// an unreadable file), each led by file:line:column. A refused flow never
// stops the others: callers run the flows they get, report every error, and
// decide whether errors fail the command (bqcdc apply exits non-zero; the
// deployed functions log them and serve the valid flows). With no valid flow
// at all, flows is empty and errs says why.

// Declarations are what flow files declare: the flows, and the
// materialized views (gold flows) over their targets.
type Declarations struct {
	Flows []*Flow
	Golds []*Gold
}

// ParseDir parses every *.sql file in dir, in name order. Materialized
// views are checked and left out (ParseDirAll returns them).
func ParseDir(dir string) (flows []*Flow, errs []error) {
	d, errs := ParseDirAll(dir)
	return d.Flows, errs
}

// ParseDirAll is ParseDir with the materialized views.
func ParseDirAll(dir string) (Declarations, []error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.sql"))
	if err != nil {
		return Declarations{}, []error{fmt.Errorf("listing flows in %s: %w", dir, err)}
	}
	sort.Strings(files)
	if len(files) == 0 {
		return Declarations{}, []error{fmt.Errorf("no flow files (*.sql) in %s", dir)}
	}
	return parseRead(files, func(f string) string { return f }, readBounded)
}

// MaxFileBytes bounds a flow file, and MaxTokens the tokens the parse of
// one holds (a flow file averages a token per 5 to 6 bytes; a file of
// commas, one per byte): together they bound the memory a parse takes to
// about 200 MB. Ten thousand flows take about 4 MB and 750,000 tokens.
const (
	MaxFileBytes = 8 << 20
	MaxTokens    = 1_000_000
)

// readBounded reads a flow file, or its first MaxFileBytes + 1 bytes (the
// parse refuses it): an oversized file is never read whole.
func readBounded(name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
}

// ParseFiles parses the named sources in the given order (used by ParseDir
// and by deployments that embed their flow files). Flow names and targets
// must be unique across all of them: of two flows sharing one, the first
// (in file order) is kept and the second refused.
func ParseFiles(names []string, srcs map[string]string) (flows []*Flow, errs []error) {
	d, errs := ParseFilesAll(names, srcs)
	return d.Flows, errs
}

// ParseFilesAll is ParseFiles with the materialized views, whose names must
// be unique among them and the flows' targets.
func ParseFilesAll(names []string, srcs map[string]string) (Declarations, []error) {
	var all []*Flow
	var golds []*Gold
	var decls []tableDecl
	var errs []error
	for _, name := range names {
		parsed, gs, ds, err := parseFile(name, srcs[name])
		decls = append(decls, ds...)
		if list, ok := err.(ErrorList); ok {
			for _, e := range list {
				errs = append(errs, e)
			}
		}
		all = append(all, parsed...)
		golds = append(golds, gs...)
	}
	applyDecls(all, decls) // a table may be declared in another file than its flow
	var flows []*Flow
	byName := map[string]*Flow{}
	targets := map[string]*Flow{}
	for _, f := range all {
		if prev, dup := byName[strings.ToLower(f.Name)]; dup {
			errs = append(errs, &Error{Pos: f.Pos, Flow: f.Name, Msg: fmt.Sprintf("the name is already used by the flow at %s: flow names must be unique", prev.Pos)})
			continue
		}
		// bqcdc maintains one view per target from one flow; Databricks can
		// merge several AUTO CDC flows into one streaming table, which
		// bqcdc does not support.
		t := strings.ToLower(f.Target.String())
		if prev, dup := targets[t]; dup {
			errs = append(errs, &Error{Pos: f.Target.Pos, Flow: f.Name, Msg: fmt.Sprintf("target %s is already written by flow %s at %s: each target table has one flow", f.Target, prev.Name, prev.Pos)})
			continue
		}
		byName[strings.ToLower(f.Name)] = f
		targets[t] = f
		flows = append(flows, f)
	}
	if len(flows) == 0 && len(errs) == 0 {
		errs = append(errs, fmt.Errorf("no flows declared in %s", strings.Join(names, ", ")))
	}
	d := Declarations{Flows: flows}
	views := map[string]Pos{}
	for _, g := range golds {
		n := strings.ToLower(g.Name.String())
		if f, dup := targets[n]; dup {
			errs = append(errs, &Error{Pos: g.Name.Pos, Flow: g.Name.Table, View: true, Msg: fmt.Sprintf("%s is already the target of flow %s at %s", g.Name, f.Name, f.Pos)})
			continue
		}
		if prev, dup := views[n]; dup {
			errs = append(errs, &Error{Pos: g.Name.Pos, Flow: g.Name.Table, View: true, Msg: fmt.Sprintf("materialized view %s is already declared at %s", g.Name, prev)})
			continue
		}
		views[n] = g.Pos
		d.Golds = append(d.Golds, g)
	}
	return d, errs
}

// Load reads the flows a deployed function runs: the *.sql files of dir when
// it is set (an override for local runs and tests), else those of builtin
// (the deployable root package embeds sql/flows), named sql/flows/<file> in
// errors. Its results are those of ParseDir.
func Load(dir string, builtin fs.FS) ([]*Flow, []error) {
	d, errs := LoadAll(dir, builtin)
	return d.Flows, errs
}

// LoadAll is Load with the materialized views.
func LoadAll(dir string, builtin fs.FS) (Declarations, []error) {
	if dir != "" {
		return ParseDirAll(dir)
	}
	if builtin == nil {
		return Declarations{}, []error{fmt.Errorf("no flows: set BQCDC_FLOWS_DIR or deploy from the repository root (which builds sql/flows in)")}
	}
	names, err := fs.Glob(builtin, "*.sql")
	if err != nil {
		return Declarations{}, []error{fmt.Errorf("listing built-in flows: %w", err)}
	}
	sort.Strings(names)
	return parseRead(names, func(n string) string { return path.Join("sql/flows", n) }, func(n string) ([]byte, error) { return fs.ReadFile(builtin, n) })
}

// parseRead reads and parses the flow files names, each shown as file(name)
// in errors; a file that cannot be read is an error of its own, and the
// others are still parsed.
func parseRead(names []string, file func(string) string, read func(string) ([]byte, error)) (Declarations, []error) {
	srcs := make(map[string]string, len(names))
	var files []string
	var errs []error
	for _, n := range names {
		f := file(n)
		b, err := read(n)
		if err != nil {
			errs = append(errs, &Error{Pos: Pos{File: f}, Msg: fmt.Sprintf("reading flow file: %v", err)})
			continue
		}
		files = append(files, f)
		srcs[f] = string(b)
	}
	d, parseErrs := ParseFilesAll(files, srcs)
	return d, append(errs, parseErrs...)
}

// Sources lists the distinct source topics of flows, in first-use order
// (snapshot flows read no topic: see SnapshotTables).
func Sources(flows []*Flow) []string {
	seen := map[string]bool{}
	var out []string
	for _, f := range flows {
		if src, ok := f.ChangelogSource(); ok && !seen[src] {
			seen[src] = true
			out = append(out, src)
		}
	}
	return out
}

// SnapshotTables lists the distinct tables snapshot flows read, in
// first-use order.
func SnapshotTables(flows []*Flow) []SnapshotSource {
	seen := map[string]bool{}
	var out []SnapshotSource
	for _, f := range flows {
		if f.IsSnapshot() && !seen[f.SourceKey()] {
			seen[f.SourceKey()] = true
			out = append(out, *f.Snapshot)
		}
	}
	return out
}

// ForSource returns the flows that read topic source.
func ForSource(flows []*Flow, source string) []*Flow {
	var out []*Flow
	for _, f := range flows {
		if src, ok := f.ChangelogSource(); ok && src == source {
			out = append(out, f)
		}
	}
	return out
}
