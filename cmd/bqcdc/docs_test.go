package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// TestDocs checks README.md, docs/*.md and terraform/README.md: every
// relative link names a file that exists, every #anchor a heading of its
// page (GitHub's anchor rules), and every bqcdc command line in a code block
// (`bqcdc ...` or `go run ./cmd/bqcdc ...`) parses with the flags of its
// command, as flagSet builds them from the code the command runs.
func TestDocs(t *testing.T) {
	root := filepath.Join("..", "..")
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append([]string{filepath.Join(root, "README.md"), filepath.Join(root, "terraform", "README.md")}, files...)
	if len(files) < 2 {
		t.Fatalf("no docs/*.md pages found beside README.md")
	}
	anchors := map[string]map[string]bool{} // by cleaned path
	anchorsOf := func(path string) map[string]bool {
		if a, ok := anchors[path]; ok {
			return a
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil
		}
		anchors[path] = headingAnchors(string(b))
		return anchors[path]
	}
	commands := 0
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		name, _ := filepath.Rel(root, file)
		doc := parseDoc(string(b))
		for _, l := range doc.links {
			target, frag, _ := strings.Cut(l.target, "#")
			path := filepath.Clean(file)
			if target != "" {
				path = filepath.Join(filepath.Dir(file), filepath.FromSlash(target))
				if _, err := os.Stat(path); err != nil {
					t.Errorf("%s:%d: link %q: %v", name, l.line, l.target, err)
					continue
				}
			}
			if frag == "" {
				continue
			}
			if !strings.HasSuffix(path, ".md") {
				t.Errorf("%s:%d: link %q: an anchor into a file that is not Markdown", name, l.line, l.target)
				continue
			}
			if !anchorsOf(path)[frag] {
				t.Errorf("%s:%d: link %q: no heading with anchor #%s in %s", name, l.line, l.target, frag, filepath.Base(path))
			}
		}
		for _, c := range doc.commands {
			commands++
			if err := parseCommand(c.text); err != nil {
				t.Errorf("%s:%d: %s\n    %v", name, c.line, c.text, err)
			}
		}
	}
	if commands == 0 {
		t.Error("no bqcdc command line found in the docs' code blocks")
	}
}

type docLink struct {
	line   int
	target string
}

type docCommand struct {
	line int
	text string
}

type doc struct {
	links    []docLink
	commands []docCommand
}

var (
	linkRE       = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	codeSpanRE   = regexp.MustCompile("`+[^`]*`+")
	schemeRE     = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
	commandStart = []string{"bqcdc ", "go run ./cmd/bqcdc "}
)

// parseDoc finds the relative links outside code, and the bqcdc command
// lines inside fenced code blocks (a trailing backslash continues a line; in
// a block with "$ " prompts, only the prompted lines are commands, the rest
// is their output).
func parseDoc(text string) doc {
	var d doc
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		trimmed := strings.TrimSpace(lines[i])
		if !strings.HasPrefix(trimmed, "```") && !strings.HasPrefix(trimmed, "~~~") {
			for _, m := range linkRE.FindAllStringSubmatch(codeSpanRE.ReplaceAllString(lines[i], ""), -1) {
				if target := m[1]; !schemeRE.MatchString(target) {
					d.links = append(d.links, docLink{i + 1, target})
				}
			}
			continue
		}
		fence, start := trimmed[:3], i+1
		end := start
		for end < len(lines) && !strings.HasPrefix(strings.TrimSpace(lines[end]), fence) {
			end++
		}
		d.commands = append(d.commands, blockCommands(lines[start:end], start+1)...)
		i = end
	}
	return d
}

// blockCommands are the bqcdc command lines of a code block whose first
// line is line first of the file.
func blockCommands(block []string, first int) []docCommand {
	prompted := false
	for _, l := range block {
		prompted = prompted || strings.HasPrefix(strings.TrimSpace(l), "$ ")
	}
	var cmds []docCommand
	for i := 0; i < len(block); i++ {
		cmd := strings.TrimSpace(block[i])
		if prompted {
			var ok bool
			if cmd, ok = strings.CutPrefix(cmd, "$ "); !ok {
				continue
			}
		}
		for _, p := range commandStart {
			if strings.HasPrefix(cmd, p) {
				line := first + i
				for strings.HasSuffix(cmd, `\`) && i+1 < len(block) {
					i++
					cmd = strings.TrimSuffix(cmd, `\`) + " " + strings.TrimSpace(block[i])
				}
				cmds = append(cmds, docCommand{line, cmd})
				break
			}
		}
	}
	return cmds
}

// parseCommand parses one documented command line with its command's flags.
func parseCommand(line string) error {
	args, err := shellWords(line)
	if err != nil {
		return err
	}
	if args[0] == "go" {
		args = args[2:] // go run ./cmd/bqcdc
	}
	if len(args) < 2 {
		return fmt.Errorf("no command")
	}
	fs := flagSet(args[1])
	if fs == nil {
		return fmt.Errorf("unknown command %q", args[1])
	}
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args[2:]); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("arguments left after the flags: %q (bqcdc %s takes flags only)", fs.Args(), args[1])
	}
	return nil
}

// shellWords splits a command line as sh would, without expansions: words,
// single and double quotes, backslash escapes; a # starting a word begins a
// comment.
func shellWords(line string) ([]string, error) {
	var words []string
	var w strings.Builder
	inWord := false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == ' ' || c == '\t':
			if inWord {
				words, inWord = append(words, w.String()), false
				w.Reset()
			}
		case c == '#' && !inWord:
			i = len(line)
		case c == '\'' || c == '"':
			end := strings.IndexByte(line[i+1:], c)
			if end < 0 {
				return nil, fmt.Errorf("unterminated %c quote", c)
			}
			w.WriteString(line[i+1 : i+1+end])
			i += end + 1
			inWord = true
		case c == '\\' && i+1 < len(line):
			i++
			w.WriteByte(line[i])
			inWord = true
		default:
			w.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, w.String())
	}
	return words, nil
}

// headingAnchors are the anchors GitHub gives the headings of a Markdown
// text: the heading's text lower-cased, without punctuation, spaces as
// hyphens, and -1, -2, ... on repeats.
func headingAnchors(text string) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	fence := ""
	for _, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(line)
		if fence == "" && (strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~")) {
			fence = trimmed[:3]
			continue
		}
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			continue
		}
		level := len(line) - len(strings.TrimLeft(line, "#"))
		if level == 0 || level > 6 || !strings.HasPrefix(line[level:], " ") {
			continue
		}
		a := slug(strings.TrimSpace(line[level:]))
		if n := seen[a]; n > 0 {
			anchors[fmt.Sprintf("%s-%d", a, n)] = true
		} else {
			anchors[a] = true
		}
		seen[a]++
	}
	return anchors
}

var mdLinkRE = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)

func slug(heading string) string {
	heading = mdLinkRE.ReplaceAllString(heading, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r) || unicode.IsMark(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// TestDocsBenchmarks checks that every benchmark the docs quote exists:
// each `go test <package> ... -bench <pattern>` names a package whose
// tests define a benchmark the pattern's first element matches (as go
// test matches it), each `-test.bench <pattern>` matches one somewhere,
// and each BenchmarkName the prose names is defined. CI runs every
// benchmark once (.ci/run bench), so a quoted one cannot rot unseen.
func TestDocsBenchmarks(t *testing.T) {
	root := filepath.Join("..", "..")
	byPkg := map[string][]string{} // "./internal/apply" -> benchmark names
	all := map[string]bool{}
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		pkg := "./" + filepath.ToSlash(rel)
		for _, m := range regexp.MustCompile(`(?m)^func (Benchmark\w*)\(b \*testing\.B\)`).FindAllStringSubmatch(string(b), -1) {
			byPkg[pkg] = append(byPkg[pkg], m[1])
			all[m[1]] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) == 0 {
		t.Fatal("no benchmarks found in the source")
	}
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, filepath.Join(root, "README.md"))
	goTest := regexp.MustCompile(`go test (\./[\w/.-]+)[^\n` + "`" + `]*?-bench '?([^\s']+)'?`)
	binary := regexp.MustCompile(`-test\.bench '?([^\s']+)'?`)
	named := regexp.MustCompile(`\bBenchmark[A-Z]\w*`)
	matches := func(pattern string, names []string) (bool, error) {
		first, _, _ := strings.Cut(pattern, "/")
		re, err := regexp.Compile(first)
		if err != nil {
			return false, err
		}
		for _, n := range names {
			if re.MatchString(n) {
				return true, nil
			}
		}
		return false, nil
	}
	quoted := 0
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		name, _ := filepath.Rel(root, file)
		text := strings.ReplaceAll(string(b), "\n", " \n") // a command may wrap in prose
		for _, m := range goTest.FindAllStringSubmatch(strings.ReplaceAll(text, " \n", " "), -1) {
			quoted++
			ok, err := matches(m[2], byPkg[strings.TrimSuffix(m[1], "/")])
			if err != nil || !ok {
				t.Errorf("%s: `go test %s ... -bench %s`: no such benchmark in %s (%v)", name, m[1], m[2], m[1], err)
			}
		}
		names := make([]string, 0, len(all))
		for n := range all {
			names = append(names, n)
		}
		for _, m := range binary.FindAllStringSubmatch(text, -1) {
			quoted++
			if ok, err := matches(m[1], names); err != nil || !ok {
				t.Errorf("%s: -test.bench %s matches no benchmark (%v)", name, m[1], err)
			}
		}
		for _, n := range named.FindAllString(text, -1) {
			quoted++
			if !all[n] {
				t.Errorf("%s: %s is not a benchmark of the source", name, n)
			}
		}
	}
	if quoted == 0 {
		t.Error("the docs quote no benchmark: the patterns above no longer read them")
	}
}
