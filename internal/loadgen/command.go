package loadgen

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/bqcdc/bqcdc/internal/config"
)

// Command is a `bqcdc loadgen` command line, less the flags that name a
// deployment (--project, --dataset, ...): the operator CLI registers those
// beside it, and the dev binary that runs `bqcdc loadgen --local` parses
// the same Command flags without them.
type Command struct {
	Spec  Spec
	Wait  time.Duration // how long to wait for every message to land
	Local bool          // start a local stack for the load
	Write string        // write the load's flows and schemas here and exit
	JSON  bool          // print the result as JSON
	Check bool          // check every view of the load against the reference model
}

// Parse parses a loadgen command line as the dev binary that runs it does:
// the deployment's flags (config.Target) beside the command's, into a flag
// set named name. The operator CLI forwards the flags it was given to that
// binary, and its test checks they parse there to what they parsed to in
// the CLI.
func Parse(name string, args []string) (config.Target, Command, *flag.FlagSet, error) {
	var t config.Target
	var c Command
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	t.Register(fs)
	c.Register(fs)
	err := fs.Parse(args)
	return t, c, fs, err
}

// Register defines the command's flags in fs, set to the defaults.
func (c *Command) Register(fs *flag.FlagSet) {
	*c = Command{Spec: DefaultSpec(), Wait: 10 * time.Minute}
	s := &c.Spec
	fs.StringVar(&s.Prefix, "prefix", s.Prefix, "topic prefix: topics are <prefix>.t000, <prefix>.t001, ...")
	fs.IntVar(&s.Tables, "tables", s.Tables, "source tables (topics)")
	fs.IntVar(&s.Messages, "messages", s.Messages, "messages per table")
	fs.IntVar(&s.Keys, "keys", s.Keys, "distinct keys per table (0: one per message)")
	fs.IntVar(&s.Width, "width", s.Width, "string columns per row")
	fs.IntVar(&s.ValueBytes, "value-bytes", s.ValueBytes, "bytes per string value")
	fs.Float64Var(&s.Rate, "rate", s.Rate, "messages per second over all tables (0: publish everything at once, as an initial snapshot does)")
	fs.DurationVar(&c.Wait, "wait", c.Wait, "how long to wait for every message to land")
	fs.BoolVar(&c.Local, "local", false, "start a local stack for the load (runs the dev binary internal/dev/cmd/bqcdc-local, on free ports)")
	fs.StringVar(&c.Write, "write", "", "write the flows and Avro schemas of the load to this folder and exit")
	fs.BoolVar(&c.JSON, "json", false, "print the result as JSON")
	fs.BoolVar(&c.Check, "check", false, "once every message landed, also check every view of the load against the reference model (locally or in the project)")
}

// Validate checks the command's numbers (the spec's and the wait).
func (c *Command) Validate() error {
	if c.Wait <= 0 {
		return fmt.Errorf("wait = %s: want a positive duration such as 10m", c.Wait)
	}
	return c.Spec.Validate()
}

// Report prints res (as JSON with --json) and returns the run's error, or
// one saying how many messages did not land within the wait.
func (c *Command) Report(w io.Writer, res Result, err error) error {
	if err != nil && res.Published == 0 {
		return err // nothing was measured: no result line
	}
	if c.JSON {
		b, _ := json.MarshalIndent(res, "", "  ")
		fmt.Fprintln(w, string(b))
	} else {
		fmt.Fprintln(w, res)
	}
	if err != nil {
		return err
	}
	if res.Landed+res.DeadLettered < res.Published {
		return fmt.Errorf("%d of %d messages did not land within %s", res.Published-res.Landed-res.DeadLettered, res.Published, c.Wait)
	}
	return nil
}
