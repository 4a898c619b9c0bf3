package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// The commands that link the BigQuery emulator (`bqcdc local`, `bqcdc
// loadgen --local`) live in a dev binary, so that this CLI, which deploys
// and operates bqcdc, builds in seconds; these run it from the source.
const (
	modulePath = "github.com/bqcdc/bqcdc"
	devPackage = "internal/dev/cmd/bqcdc-local"
)

// runDev runs `bqcdc-local <name> <args...>`: it builds the dev binary from
// the bqcdc source around the working directory (go build, cached: after
// the first build this only checks that it is up to date) and execs it in
// the working directory, with this process's environment, standard streams
// and signals, so it behaves as the command did when it was part of bqcdc.
// It returns only if the binary cannot be built or started.
func runDev(ctx context.Context, name string, args []string) error {
	how := fmt.Sprintf("`bqcdc %s` runs in the dev binary, which links the BigQuery emulator and the reference model and so is not built into this one", name)
	wd, err := os.Getwd()
	if err != nil {
		return fmt.Errorf("%s: reading the working directory: %w", how, err)
	}
	root, ok := moduleRoot(wd)
	if !ok {
		return fmt.Errorf("%s: it needs the bqcdc source (no %s module with %s above %s); in a clone of %s run\n  go run ./cmd/bqcdc %s\nor\n  go run ./%s %s",
			how, modulePath, devPackage, wd, modulePath, name, devPackage, name)
	}
	goCmd, err := exec.LookPath("go")
	if err != nil {
		return fmt.Errorf("%s: it needs the go command to build ./%s from %s: %w", how, devPackage, root, err)
	}
	bin, err := devBinary(root)
	if err != nil {
		return err
	}
	build := exec.CommandContext(ctx, goCmd, "build", "-o", bin, "./"+devPackage)
	build.Dir, build.Stdout, build.Stderr = root, os.Stderr, os.Stderr
	// Say why a first run waits, but not on the cached ones.
	slow := time.AfterFunc(3*time.Second, func() {
		fmt.Fprintf(os.Stderr, "bqcdc %s: building ./%s (a first build compiles the BigQuery emulator: minutes; later ones are cached)\n", name, devPackage)
	})
	err = build.Run()
	slow.Stop()
	if err != nil {
		return fmt.Errorf("building ./%s in %s: %w", devPackage, root, err)
	}
	return execDev(bin, append([]string{"bqcdc-local", name}, args...))
}

// moduleRoot is the directory at or above dir that holds the bqcdc module
// with the dev binary's source.
func moduleRoot(dir string) (string, bool) {
	for {
		if isModule(filepath.Join(dir, "go.mod")) {
			if st, err := os.Stat(filepath.Join(dir, filepath.FromSlash(devPackage))); err == nil && st.IsDir() {
				return dir, true
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}

// isModule reports whether the go.mod at path declares the bqcdc module.
func isModule(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "//")
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "module"); ok && rest != "" && (rest[0] == ' ' || rest[0] == '\t') {
			return strings.Trim(strings.TrimSpace(rest), `"`) == modulePath
		}
	}
	return false
}

// devBinary is where the dev binary of the source at root is built: the
// user's cache, one file per clone, so that go build can tell it is up to
// date (outside the repository: the functions' source archive is the
// repository root).
func devBinary(root string) (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	dir := filepath.Join(base, "bqcdc", fmt.Sprintf("%x", sha256.Sum256([]byte(root)))[:12])
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("creating %s for the dev binary: %w", dir, err)
	}
	return filepath.Join(dir, "bqcdc-local"+exeSuffix), nil
}

// setFlags are the flags set on fs's command line that keep accepts, as
// -name=value arguments (each flag's value as it parsed it).
func setFlags(fs *flag.FlagSet, keep func(name string) bool) []string {
	var args []string
	fs.Visit(func(f *flag.Flag) {
		if keep(f.Name) {
			args = append(args, "-"+f.Name+"="+f.Value.String())
		}
	})
	return args
}

// errFlagsOnly stops a command after its flag set is built (see flagSet).
var errFlagsOnly = errors.New("flags only")

type flagsOnlyKey struct{}

// parseFlags parses a command's flags: every command calls it first, before
// it does anything, so flagSet can return a command's flag set by running
// the command with a context that asks for it. -h and --help print the
// usage on stdout and end the command with errHelp (exit 0); a flag that
// does not parse prints the usage on stderr and is a usage error (exit 2),
// as Go's and POSIX tools do.
func parseFlags(ctx context.Context, fs *flag.FlagSet, args []string) error {
	if out, ok := ctx.Value(flagsOnlyKey{}).(**flag.FlagSet); ok {
		*out = fs
		return errFlagsOnly
	}
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fs.SetOutput(os.Stdout)
		fs.Usage()
		return errHelp
	case err != nil:
		fs.SetOutput(os.Stderr)
		fs.Usage()
		return usageError{err}
	case fs.NArg() > 0:
		fs.SetOutput(os.Stderr)
		fs.Usage()
		return usagef("unexpected argument %q (flags only)", fs.Arg(0))
	}
	return nil
}

// errHelp ends a command whose help was asked for: exit 0.
var errHelp = errors.New("help requested")

// usageError is a command line that is wrong (a flag that does not parse,
// a value out of range): exit 2, checked before any credential or network
// work.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// flagSet is the flag set of the command name, as the command builds it
// (nil for an unknown command). The docs test parses every `bqcdc` command
// line the documentation shows with it.
func flagSet(name string) *flag.FlagSet {
	for _, c := range commands {
		if c.name == name {
			var fs *flag.FlagSet
			if err := c.run(context.WithValue(context.Background(), flagsOnlyKey{}, &fs), nil); !errors.Is(err, errFlagsOnly) {
				panic(fmt.Sprintf("bqcdc %s did not parse its flags first (got %v)", name, err))
			}
			return fs
		}
	}
	return nil
}
