package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"regexp"
	"slices"
	"time"

	"cloud.google.com/go/pubsub/v2"
	"github.com/bqcdc/bqcdc/internal/clients"
	"github.com/bqcdc/bqcdc/internal/config"
	"github.com/bqcdc/bqcdc/internal/failure"
	"github.com/bqcdc/bqcdc/internal/progress"
	"github.com/bqcdc/bqcdc/internal/replay"
)

// runReplay publishes dead letters again to their topics, once their cause
// is fixed, and prints what it replayed.
func runReplay(ctx context.Context, args []string) error {
	var t target
	var ids names
	var f replay.Filter
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	t.register(fs)
	fs.StringVar(&f.Topic, "topic", "", "replay only dead letters of this topic")
	fs.StringVar(&f.Stage, "stage", "", fmt.Sprintf("replay only dead letters of this stage (%s)", failure.Stages()))
	fs.Var(&ids, "message-id", "replay only this message (repeatable)")
	since := fs.Duration("since", 7*24*time.Hour, "replay only messages dead-lettered within this long (0: any time)")
	dryRun := fs.Bool("dry-run", false, "list what would be replayed, publish nothing")
	if err := t.parse(ctx, fs, args); err != nil {
		return err
	}
	if t.BigQuery.Project == "" {
		return usagef("--project is required")
	}
	if err := checkReplayFlags(f, ids, *since); err != nil {
		return err
	}
	// Ingest honours a replay id only with its proof, signed with the
	// function's replay key; without it, replayed messages would be stored
	// under new ids. A dry run needs no key.
	key, err := config.ReplayKeyFromEnv()
	if err != nil {
		return err
	}
	if len(key) == 0 && !*dryRun {
		return replay.ErrNoKey
	}
	f.MessageIDs = ids
	if *since > 0 {
		f.Since = time.Now().Add(-*since)
	}
	bq, err := clients.NewBigQuery(ctx, t.BigQuery)
	if err != nil {
		return err
	}
	defer bq.Close()
	letters, err := replay.Select(ctx, bq, t.Dataset, f)
	if err != nil {
		return err
	}
	for _, l := range letters {
		fmt.Printf("%s  %-40s %-10s %s  %s\n", l.DeadLetteredAt.Format(time.RFC3339), l.Topic, l.Stage, l.MessageID, truncate(l.Reason, 120))
	}
	if *dryRun || len(letters) == 0 {
		fmt.Printf("%d dead letter(s) selected; nothing published\n", len(letters))
		return nil
	}
	// PUBSUB_EMULATOR_HOST, when set, points the client at an emulator.
	ps, err := pubsub.NewClient(ctx, t.BigQuery.Project)
	if err != nil {
		return fmt.Errorf("creating the Pub/Sub client: %w", err)
	}
	defer ps.Close()
	meter := progress.New(os.Stderr, "replay", "dead letters", len(letters), progress.IsTerminal(os.Stderr))
	n, err := replay.ReplayProgress(ctx, letters, clientPublisher{ps}, key, func(done int) { meter.Set(done, "") })
	meter.Finish()
	fmt.Printf("%d of %d dead letter(s) published again\n", n, len(letters))
	return err
}

// checkReplayFlags refuses what cannot select a dead letter: a negative
// --since, a --stage that is not a pipeline stage, a --message-id that no
// Pub/Sub message id looks like.
func checkReplayFlags(f replay.Filter, ids []string, since time.Duration) error {
	if since < 0 {
		return usagef("--since %s: want 0 (any time) or a positive duration such as 24h", since)
	}
	if f.Stage != "" && !slices.Contains(failure.Stages(), failure.Stage(f.Stage)) {
		return usagef("--stage %q: want one of %s", f.Stage, failure.Stages())
	}
	for _, id := range ids {
		if !messageID.MatchString(id) {
			return usagef("--message-id %q: want a Pub/Sub message id (up to 256 letters, digits, '.', '_', ':' or '-')", id)
		}
	}
	return nil
}

// messageID is what a Pub/Sub message id looks like: decimal digits on
// Google's Pub/Sub, "m0"-like on the emulator.
var messageID = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,256}$`)

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// clientPublisher publishes with the Pub/Sub client.
type clientPublisher struct{ c *pubsub.Client }

func (p clientPublisher) Publish(ctx context.Context, topic string, data []byte, attrs map[string]string) (string, error) {
	pub := p.c.Publisher(topic)
	defer pub.Stop()
	return pub.Publish(ctx, &pubsub.Message{Data: data, Attributes: attrs}).Get(ctx)
}
