package flow

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/bqcdc/bqcdc/internal/catalog"
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
	// Contested are flows refused only because another flow or view
	// claims one of their names (each has its error): bqcdc apply keeps,
	// of them, the one whose deployed view names it (apply.Contested).
	Contested []*Flow
}

// ContestedFlow is the contested flow err refuses (a *Error naming one of
// d.Contested), or nil.
func (d Declarations) ContestedFlow(err error) *Flow {
	var fe *Error
	if !errors.As(err, &fe) || fe.View {
		return nil
	}
	for _, f := range d.Contested {
		if f.Name == fe.Flow {
			return f
		}
	}
	return nil
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
	buf := make([]byte, MaxFileBytes+1)
	n, err := io.ReadFull(f, buf)
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		err = nil // shorter than the bound: the whole file
	}
	return buf[:n], err
}

// ParseFiles parses the named sources in the given order (used by ParseDir
// and by deployments that embed their flow files). Flow names must be
// unique across all of them (of two flows sharing one, the first in file
// order is kept); every name a flow's or a view's objects take must be
// its alone (claim: every claimant is refused).
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
	for _, e := range applyDecls(all, decls) { // a table may be declared in another file than its flow
		errs = append(errs, e)
	}
	var named []*Flow
	byName := map[string]*Flow{}
	for _, f := range all {
		if prev, dup := byName[strings.ToLower(f.Name)]; dup {
			errs = append(errs, &Error{Pos: f.Pos, Flow: f.Name, Msg: fmt.Sprintf("the name is already used by the flow at %s: flow names must be unique", prev.Pos)})
			continue
		}
		byName[strings.ToLower(f.Name)] = f
		named = append(named, f)
	}
	d, claimErrs := claim(named, golds)
	errs = append(errs, claimErrs...)
	if len(d.Flows) == 0 && len(errs) == 0 {
		errs = append(errs, fmt.Errorf("no flows declared in %s", strings.Join(names, ", ")))
	}
	return d, errs
}

// A claimant of a name: a flow, a materialized view, or bqcdc itself (a
// deployment table, a changelog) when both are nil.
type claimant struct {
	flow  *Flow
	gold  *Gold
	obj   Object
	owner string // bqcdc's own: what the name is ("the changelog of source x")
}

func (c claimant) String() string {
	switch {
	case c.flow != nil:
		return fmt.Sprintf("the %s %s of flow %s at %s", c.obj.What, c.obj.Name, c.flow.Name, c.flow.Target.Pos)
	case c.gold != nil:
		return fmt.Sprintf("the %s %s of materialized view %s at %s", c.obj.What, c.obj.Name, c.gold.Name, c.gold.Name.Pos)
	}
	return c.owner
}

// claim gives every name the deployment will hold one owner: bqcdc's own
// tables (catalog.DeploymentTables) and changelogs first, then each flow's
// and materialized view's objects (Flow.Objects, Gold.Objects). A target
// or view whose name is reserved (reservedName) is refused even when its
// owner does not exist yet; a name two flows or views claim refuses every
// claimant, each error naming the others (never the first in file order:
// a new file must not take a running flow's target). Flows refused only
// for a claim of another flow or view are Declarations.Contested: bqcdc
// apply keeps the one whose deployed view names it (catalog.FlowLabel).
func claim(flows []*Flow, golds []*Gold) (Declarations, []error) {
	c := claims{refusedFlow: map[*Flow]bool{}, refusedGold: map[*Gold]bool{}, contested: map[*Flow]bool{}, byName: map[string][]claimant{}}
	c.reserved(flows, golds)
	for _, t := range catalog.DeploymentTables() {
		c.add(claimant{obj: Object{Name: t}, owner: "bqcdc's own table " + t})
	}
	for _, src := range Sources(flows) {
		c.add(claimant{obj: Object{Name: catalog.TableName(src)}, owner: "the changelog of source " + src})
	}
	for _, f := range flows {
		if !c.refusedFlow[f] {
			for _, o := range f.Objects() {
				c.add(claimant{flow: f, obj: o})
			}
		}
	}
	for _, g := range golds {
		if !c.refusedGold[g] {
			for _, o := range g.Objects() {
				c.add(claimant{gold: g, obj: o})
			}
		}
	}
	for _, k := range c.order {
		c.settle(c.byName[k])
	}
	var d Declarations
	for _, f := range flows {
		switch {
		case !c.refusedFlow[f]:
			d.Flows = append(d.Flows, f)
		case c.contested[f]:
			d.Contested = append(d.Contested, f)
		}
	}
	for _, g := range golds {
		if !c.refusedGold[g] {
			d.Golds = append(d.Golds, g)
		}
	}
	return d, c.errs
}

// claims is the state of claim: the names claimed (in order), the flows
// and views refused so far, and their errors.
type claims struct {
	byName      map[string][]claimant // by lower-case dataset.name
	order       []string
	refusedFlow map[*Flow]bool
	refusedGold map[*Gold]bool
	contested   map[*Flow]bool // refused only for another flow's or view's claim
	errs        []error
}

func (c *claims) add(cl claimant) {
	k := strings.ToLower(cl.obj.Dataset) + "." + strings.ToLower(cl.obj.Name)
	if _, seen := c.byName[k]; !seen {
		c.order = append(c.order, k)
	}
	c.byName[k] = append(c.byName[k], cl)
}

// reserved refuses the targets and views whose names are reserved.
func (c *claims) reserved(flows []*Flow, golds []*Gold) {
	for _, f := range flows {
		if why := reservedName(f.Target.Dataset, f.Target.Table); why != "" {
			c.errs = append(c.errs, &Error{Pos: f.Target.Pos, Flow: f.Name, Msg: fmt.Sprintf("target %s: %s; choose another name", f.Target, why)})
			c.refusedFlow[f] = true
		}
	}
	for _, g := range golds {
		if why := reservedName(g.Name.Dataset, g.Name.Table); why != "" {
			c.errs = append(c.errs, &Error{Pos: g.Name.Pos, Flow: g.Name.Table, View: true, Msg: fmt.Sprintf("%s: %s; choose another name", g.Name, why)})
			c.refusedGold[g] = true
		}
	}
}

// settle refuses, of a name's claimants, every flow and view when there
// are two or more: naming bqcdc's own table when it is one, else each
// other (contested).
func (c *claims) settle(cs []claimant) {
	if len(cs) < 2 {
		return
	}
	own := ""
	for _, cl := range cs {
		if cl.flow == nil && cl.gold == nil {
			own = cl.owner
		}
	}
	for i, cl := range cs {
		if (cl.flow == nil && cl.gold == nil) || (cl.flow != nil && c.refusedFlow[cl.flow]) || (cl.gold != nil && c.refusedGold[cl.gold]) {
			continue
		}
		msg := fmt.Sprintf("its %s %s would be %s: choose another name", cl.obj.What, cl.obj.Name, own)
		if own == "" {
			var others []string
			for j, o := range cs {
				if j != i {
					others = append(others, o.String())
				}
			}
			msg = fmt.Sprintf("its %s %s is also %s: each is refused, as a name has one owner (rename one; bqcdc apply keeps a flow whose deployed view is its own)", cl.obj.What, cl.obj.Name, strings.Join(others, " and "))
		}
		if cl.flow != nil {
			c.errs = append(c.errs, &Error{Pos: cl.flow.Target.Pos, Flow: cl.flow.Name, Msg: msg})
			c.refusedFlow[cl.flow], c.contested[cl.flow] = true, own == ""
			continue
		}
		c.errs = append(c.errs, &Error{Pos: cl.gold.Name.Pos, Flow: cl.gold.Name.Table, View: true, Msg: msg})
		c.refusedGold[cl.gold] = true
	}
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
