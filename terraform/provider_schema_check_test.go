package terraform_test

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/bqcdc/bqcdc/internal/spelling"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// This file checks resource, data and provider blocks against the provider
// schema in provider-schema.json (written by scripts/extract-provider-schema.sh
// from the CDKTF packages generated from the providers' schemas): the part of
// `terraform validate` that needs the schema but not the provider binary.
// It does not check types, the providers' validators (enums, formats,
// ConflictsWith, ExactlyOneOf) or anything the provider decides at plan time.

// providerSchema is provider-schema.json.
type providerSchema struct {
	Providers map[string]struct {
		Source  string `json:"source"`
		Version string `json:"version"`
		Package string `json:"package"`
	} `json:"providers"`
	Provider map[string]*schemaBlock `json:"provider"`
	Resource map[string]*schemaBlock `json:"resource"`
	Data     map[string]*schemaBlock `json:"data"`
}

// schemaBlock is the body of a resource, data source, provider or nested block.
type schemaBlock struct {
	Attributes map[string]schemaAttr    `json:"attributes"`
	Blocks     map[string]*schemaNested `json:"blocks"`
}

type schemaAttr struct {
	Mode string `json:"mode"` // required, optional, optional+computed, computed
	Type string `json:"type"` // as Terraform writes it; informative, not checked
}

type schemaNested struct {
	schemaBlock
	Nesting  string `json:"nesting"` // list or set
	MinItems int    `json:"min_items"`
	MaxItems int    `json:"max_items"` // 0: unbounded
}

func readProviderSchema(path string) (*providerSchema, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the provider schema: %w", err)
	}
	var s providerSchema
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("parsing %s: %w", path, err)
	}
	return &s, nil
}

// Meta-arguments and meta-blocks Terraform itself handles, per block kind.
var (
	metaArgs = map[string]map[string]bool{
		"resource": {"count": true, "for_each": true, "depends_on": true, "provider": true},
		"data":     {"count": true, "for_each": true, "depends_on": true, "provider": true},
		"provider": {"alias": true},
	}
	metaBlocks = map[string]map[string]bool{
		"resource": {"lifecycle": true, "provisioner": true, "connection": true},
		"data":     {"lifecycle": true},
		"provider": {},
	}
)

// schemaCheck collects the problems of one module.
type schemaCheck struct {
	schema   *providerSchema
	problems []string
	// What was checked, so a test can tell a clean run from a blind one.
	arguments, blocks, references int
}

func (c *schemaCheck) addf(rng hcl.Range, format string, args ...any) {
	c.problems = append(c.problems, rng.String()+": "+fmt.Sprintf(format, args...))
}

// schemaOf returns the schema of a top-level block kind and type, or nil.
func (s *providerSchema) schemaOf(kind, typ string) *schemaBlock {
	switch kind {
	case "resource":
		return s.Resource[typ]
	case "data":
		return s.Data[typ]
	case "provider":
		return s.Provider[typ]
	}
	return nil
}

// checkModule checks every resource, data and provider block of m, and
// every reference m makes to a resource's or data source's attributes.
func (c *schemaCheck) checkModule(m *tfModule) {
	for _, f := range m.files {
		for _, b := range f.body.Blocks {
			kind := b.Type
			if metaArgs[kind] == nil || len(b.Labels) == 0 {
				continue
			}
			typ := b.Labels[0]
			sb := c.schema.schemaOf(kind, typ)
			if sb == nil {
				c.addf(b.DefRange(), "%s type %s is not in provider-schema.json (run scripts/extract-provider-schema.sh)", kind, typ)
				continue
			}
			c.checkBody(kind+" "+strings.Join(b.Labels, "."), b.Body, sb, sb, metaArgs[kind], metaBlocks[kind])
		}
		hclsyntax.VisitAll(f.body, func(n hclsyntax.Node) hcl.Diagnostics {
			if tr, rng, ok := fullTraversal(n); ok {
				c.checkReference(m, tr, rng)
			}
			return nil
		})
	}
}

// checkBody checks one block body against its schema: every argument and
// block known and in its place, no computed-only attribute set, every
// required argument and block present, no more blocks than allowed.
func (c *schemaCheck) checkBody(where string, body *hclsyntax.Body, sb, root *schemaBlock, meta, metaBlk map[string]bool) {
	for _, name := range sortedKeys(body.Attributes) {
		a := body.Attributes[name]
		if meta[name] {
			continue
		}
		c.arguments++
		if attr, ok := sb.Attributes[name]; ok {
			if attr.Mode == "computed" {
				c.addf(a.NameRange, "%s: %s is computed by the provider and cannot be set", where, name)
			}
			continue
		}
		if _, ok := sb.Blocks[name]; ok {
			c.addf(a.NameRange, "%s: %s is a block: write `%s { ... }`, not `%s = ...`", where, name, name, name)
			continue
		}
		c.addf(a.NameRange, "%s: unsupported argument %s%s", where, name, hint(sb, root, name))
	}
	static, dynamic := map[string]int{}, map[string]bool{}
	for _, blk := range body.Blocks {
		typ, inner, rng := blk.Type, blk.Body, blk.TypeRange
		if metaBlk[typ] {
			continue
		}
		if typ == "dynamic" {
			if len(blk.Labels) != 1 {
				c.addf(rng, "%s: a dynamic block needs one label, the block type", where)
				continue
			}
			typ, rng = blk.Labels[0], blk.LabelRanges[0]
			content := child(blk.Body, "content")
			if content == nil || blk.Body.Attributes["for_each"] == nil {
				c.addf(rng, "%s: dynamic %q needs for_each and a content block", where, typ)
				continue
			}
			inner = content.Body
			dynamic[typ] = true
		} else {
			static[typ]++
		}
		c.blocks++
		nb, ok := sb.Blocks[typ]
		if !ok {
			if _, isAttr := sb.Attributes[typ]; isAttr {
				c.addf(rng, "%s: %s is an argument: write `%s = ...`, not a block", where, typ, typ)
			} else {
				c.addf(rng, "%s: unsupported block type %s%s", where, typ, hint(sb, root, typ))
			}
			continue
		}
		c.checkBody(where+"."+typ, inner, &nb.schemaBlock, root, nil, nil)
	}
	for _, name := range sortedKeys(sb.Attributes) {
		if sb.Attributes[name].Mode == "required" && body.Attributes[name] == nil {
			c.addf(body.SrcRange, "%s: missing required argument %s", where, name)
		}
	}
	for _, name := range sortedKeys(sb.Blocks) {
		nb := sb.Blocks[name]
		if static[name] < nb.MinItems && !dynamic[name] {
			c.addf(body.SrcRange, "%s: missing required block %s (at least %d)", where, name, nb.MinItems)
		}
		if nb.MaxItems > 0 && static[name] > nb.MaxItems {
			c.addf(body.SrcRange, "%s: at most %d %s block(s), got %d", where, nb.MaxItems, name, static[name])
		}
	}
}

// hint suggests a near spelling in the same block, or the blocks of the
// resource where the name belongs (a misplaced argument).
func hint(sb, root *schemaBlock, name string) string {
	if best := spelling.Nearest(name, append(sortedKeys(sb.Attributes), sortedKeys(sb.Blocks)...)); best != "" {
		return fmt.Sprintf(" (did you mean %s?)", best)
	}
	if at := placesOf(root, name, ""); len(at) > 0 {
		return fmt.Sprintf(" (it belongs in %s)", strings.Join(at, ", "))
	}
	return ""
}

// placesOf lists the nested blocks of sb (as dotted paths) that declare name.
func placesOf(sb *schemaBlock, name, prefix string) []string {
	var out []string
	for _, bn := range sortedKeys(sb.Blocks) {
		nb := sb.Blocks[bn]
		p := strings.TrimPrefix(prefix+"."+bn, ".")
		_, isAttr := nb.Attributes[name]
		_, isBlock := nb.Blocks[name]
		if isAttr || isBlock {
			out = append(out, p)
		}
		out = append(out, placesOf(&nb.schemaBlock, name, p)...)
	}
	return out
}

// fullTraversal returns the traversal an expression node makes through a
// resource, including the forms hclsyntax splits in two: an index by an
// expression (google_x.y[each.key].attr) and a splat (google_x.y[*].attr).
func fullTraversal(n hclsyntax.Node) (hcl.Traversal, hcl.Range, bool) {
	switch e := n.(type) {
	case *hclsyntax.ScopeTraversalExpr:
		return e.Traversal, e.SrcRange, true
	case *hclsyntax.RelativeTraversalExpr:
		if ix, ok := e.Source.(*hclsyntax.IndexExpr); ok {
			if st, ok := ix.Collection.(*hclsyntax.ScopeTraversalExpr); ok {
				return joinTraversal(st.Traversal, e.Traversal), e.SrcRange, true
			}
		}
	case *hclsyntax.SplatExpr:
		st, ok1 := e.Source.(*hclsyntax.ScopeTraversalExpr)
		each, ok2 := e.Each.(*hclsyntax.RelativeTraversalExpr)
		if ok1 && ok2 {
			return joinTraversal(st.Traversal, each.Traversal), e.SrcRange, true
		}
	}
	return nil, hcl.Range{}, false
}

func joinTraversal(head, tail hcl.Traversal) hcl.Traversal {
	out := append(hcl.Traversal{}, head...)
	out = append(out, hcl.TraverseSplat{})
	return append(out, tail...)
}

// checkReference checks that a reference to a resource or data source of m
// names an attribute or block its type exports, and inside a block one of
// the block's. Attributes of object type are not followed.
func (c *schemaCheck) checkReference(m *tfModule, tr hcl.Traversal, rng hcl.Range) {
	names := make([]string, 0, len(tr))
	for _, step := range tr {
		switch s := step.(type) {
		case hcl.TraverseRoot:
			names = append(names, s.Name)
		case hcl.TraverseAttr:
			names = append(names, s.Name)
		}
	}
	var (
		sb   *schemaBlock
		what string
		rest []string
	)
	switch root := names[0]; {
	case root == "data" && len(names) >= 3:
		if m.data[names[1]+"."+names[2]] == nil {
			return // TestReferencesResolve reports it
		}
		sb, what, rest = c.schema.Data[names[1]], "data source "+names[1], names[3:]
	case strings.HasPrefix(root, "google_") || strings.HasPrefix(root, "archive_"):
		if len(names) < 2 || m.resources[root+"."+names[1]] == nil {
			return
		}
		sb, what, rest = c.schema.Resource[root], "resource type "+root, names[2:]
	default:
		return
	}
	if sb == nil {
		return // reported at the block
	}
	c.references++
	for _, name := range rest {
		if _, ok := sb.Attributes[name]; ok {
			return
		}
		nb, ok := sb.Blocks[name]
		if !ok {
			c.addf(rng, "%s: %s exports no attribute %s%s", traversalString(tr), what, name, hint(sb, sb, name))
			return
		}
		sb, what = &nb.schemaBlock, what+" block "+name
	}
}

// versionAllowed reports whether version meets a Terraform version
// constraint made of comma-separated ">=", ">", "<=", "<", "=", "!=" and "~>"
// terms on dotted numeric versions.
func versionAllowed(version, constraint string) (bool, error) {
	v, err := parseVersion(version)
	if err != nil {
		return false, err
	}
	for _, term := range strings.Split(constraint, ",") {
		term = strings.TrimSpace(term)
		op := "="
		for _, o := range []string{">=", "<=", "~>", "!=", ">", "<", "="} {
			if strings.HasPrefix(term, o) {
				op, term = o, strings.TrimSpace(strings.TrimPrefix(term, o))
				break
			}
		}
		w, err := parseVersion(term)
		if err != nil {
			return false, fmt.Errorf("constraint %q: %w", constraint, err)
		}
		cmp := compareVersions(v, w)
		ok := map[string]bool{">=": cmp >= 0, "<=": cmp <= 0, ">": cmp > 0, "<": cmp < 0, "=": cmp == 0, "!=": cmp != 0}[op]
		if op == "~>" {
			// ~> 6.1 allows 6.x from 6.1; ~> 6.1.2 allows 6.1.x from 6.1.2.
			upper := append([]int{}, w[:max(len(w)-1, 1)]...)
			upper[len(upper)-1]++
			ok = cmp >= 0 && compareVersions(v, upper) < 0
		}
		if !ok {
			return false, nil
		}
	}
	return true, nil
}

func parseVersion(s string) ([]int, error) {
	var out []int
	for _, p := range strings.Split(s, ".") {
		n, err := strconv.Atoi(p)
		if err != nil {
			return nil, fmt.Errorf("version %q is not dotted numbers", s)
		}
		out = append(out, n)
	}
	return out, nil
}

func compareVersions(a, b []int) int {
	for i := 0; i < max(len(a), len(b)); i++ {
		var x, y int
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		if x != y {
			if x < y {
				return -1
			}
			return 1
		}
	}
	return 0
}
