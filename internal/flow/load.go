package flow

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// ParseDir parses every *.sql file in dir (in name order) and checks that flow
// names and targets are unique across all of them.
func ParseDir(dir string) ([]*Flow, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.sql"))
	if err != nil {
		return nil, fmt.Errorf("listing flows in %s: %w", dir, err)
	}
	sort.Strings(files)
	if len(files) == 0 {
		return nil, fmt.Errorf("no flow files (*.sql) in %s", dir)
	}
	srcs := make(map[string]string, len(files))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("reading flow file: %w", err)
		}
		srcs[f] = string(b)
	}
	return ParseFiles(files, srcs)
}

// ParseFiles parses the named sources in the given order (used by ParseDir
// and by deployments that embed their flow files).
func ParseFiles(names []string, srcs map[string]string) ([]*Flow, error) {
	var all []*Flow
	var errs ErrorList
	for _, name := range names {
		flows, err := Parse(name, srcs[name])
		if list, ok := err.(ErrorList); ok {
			errs = append(errs, list...)
		} else if err != nil {
			return nil, err
		}
		all = append(all, flows...)
	}
	names2 := map[string]*Flow{}
	targets := map[string]*Flow{}
	for _, f := range all {
		if prev, dup := names2[strings.ToLower(f.Name)]; dup {
			errs = append(errs, errorf(f.Pos, "flow name %s is already used at %s: flow names must be unique", f.Name, prev.Pos))
			continue
		}
		names2[strings.ToLower(f.Name)] = f
		t := strings.ToLower(f.Target.String())
		if prev, dup := targets[t]; dup {
			errs = append(errs, errorf(f.Target.Pos, "target %s is already written by flow %s at %s: each target table has one flow", f.Target, prev.Name, prev.Pos))
			continue
		}
		targets[t] = f
	}
	if err := errs.Err(); err != nil {
		return nil, err
	}
	if len(all) == 0 {
		return nil, fmt.Errorf("no flows declared in %s", strings.Join(names, ", "))
	}
	return all, nil
}

// Load reads the flows a deployed function runs: the *.sql files of dir when
// it is set (an override for local runs and tests), else those of builtin
// (the deployable root package embeds sql/flows), named sql/flows/<file> in
// errors.
func Load(dir string, builtin fs.FS) ([]*Flow, error) {
	if dir != "" {
		return ParseDir(dir)
	}
	if builtin == nil {
		return nil, fmt.Errorf("no flows: set BQCDC_FLOWS_DIR or deploy from the repository root (which builds sql/flows in)")
	}
	names, err := fs.Glob(builtin, "*.sql")
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	srcs := map[string]string{}
	var files []string
	for _, n := range names {
		b, err := fs.ReadFile(builtin, n)
		if err != nil {
			return nil, err
		}
		file := path.Join("sql/flows", n)
		files = append(files, file)
		srcs[file] = string(b)
	}
	return ParseFiles(files, srcs)
}

// Sources lists the distinct source topics of flows, in first-use order.
func Sources(flows []*Flow) []string {
	seen := map[string]bool{}
	var out []string
	for _, f := range flows {
		if !seen[f.Source.Name] {
			seen[f.Source.Name] = true
			out = append(out, f.Source.Name)
		}
	}
	return out
}

// ForSource returns the flows that read source.
func ForSource(flows []*Flow, source string) []*Flow {
	var out []*Flow
	for _, f := range flows {
		if f.Source.Name == source {
			out = append(out, f)
		}
	}
	return out
}
