// Package registry fetches writer schemas from a Confluent-compatible Schema
// Registry (through github.com/riferrei/srclient) and keeps them parsed, one
// fetch per schema id per process: schema ids are immutable, so the cache
// never needs invalidating. Concurrent misses for the same id share one
// request.
//
// Errors are classified for the caller: ErrNotFound and ErrInvalidSchema can
// never succeed on retry; everything else (5xx, timeouts, refused
// connections, bad credentials an operator can fix) is ErrUnavailable.
package registry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	neturl "net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bqcdc/bqcdc/internal/redact"
	"github.com/hamba/avro/v2"
	"github.com/riferrei/srclient"
	"golang.org/x/sync/singleflight"
)

// Sentinel errors; wrap-tested with errors.Is.
var (
	ErrNotFound      = errors.New("schema not found in the registry")
	ErrInvalidSchema = errors.New("registry returned a schema that does not parse")
	ErrUnavailable   = errors.New("schema registry unavailable")
)

// Options configure a Client.
type Options struct {
	Username, Password string        // basic auth; never logged
	Timeout            time.Duration // per HTTP request; default 10 s
}

// Client is safe for concurrent use.
type Client struct {
	sr    *srclient.SchemaRegistryClient
	group singleflight.Group

	mu   sync.RWMutex
	byID map[int]avro.Schema
}

// New returns a client for the registry at url.
//
// Credentials in the URL (https://user:secret@host) are taken out of it and
// used as basic auth when opts names none, so that no request, log line or
// error of the registry client can quote them; errors are cleaned with
// package redact as well.
func New(url string, opts Options) *Client {
	if opts.Timeout == 0 {
		opts.Timeout = 10 * time.Second
	}
	url, user, password := splitCredentials(url)
	if opts.Username == "" && opts.Password == "" {
		opts.Username, opts.Password = user, password
	}
	sr := srclient.NewSchemaRegistryClient(strings.TrimRight(url, "/"), srclient.WithClient(&http.Client{Timeout: opts.Timeout}))
	// srclient would also cache "latest" forever; this package caches by id itself.
	sr.CachingEnabled(false)
	if opts.Username != "" || opts.Password != "" {
		sr.SetCredentials(opts.Username, opts.Password)
	}
	return &Client{sr: sr, byID: map[int]avro.Schema{}}
}

// splitCredentials takes the user information out of a URL. A URL that does
// not parse is returned as it is (requests to it fail, with errors redacted).
func splitCredentials(raw string) (clean, user, password string) {
	u, err := neturl.Parse(raw)
	if err != nil || u.User == nil {
		return raw, "", ""
	}
	user = u.User.Username()
	password, _ = u.User.Password()
	u.User = nil
	return u.String(), user, password
}

// Parse parses schema text with a private name cache: versions of one schema
// share record names, and hamba's global cache would let one version's
// definition leak into another's. The text is checked first (check.go):
// an error says what is wrong and where, in at most MaxErrorBytes, and
// never echoes the text.
func Parse(text string) (avro.Schema, error) {
	if err := checkText(text); err != nil {
		return nil, err
	}
	s, err := avro.ParseWithCache(text, "", &avro.SchemaCache{})
	if err != nil {
		return nil, errors.New(clip(err.Error(), text))
	}
	return s, nil
}

// Schema returns the parsed schema with the given id.
func (c *Client) Schema(ctx context.Context, id int) (avro.Schema, error) {
	c.mu.RLock()
	s, ok := c.byID[id]
	c.mu.RUnlock()
	if ok {
		return s, nil
	}
	v, err, _ := c.group.Do(strconv.Itoa(id), func() (any, error) {
		text, err := call(ctx, func() (string, error) {
			s, err := c.sr.GetSchema(id)
			if err != nil {
				return "", err
			}
			return s.Schema(), nil
		})
		if err != nil {
			return nil, fmt.Errorf("fetching schema %d: %w", id, err)
		}
		parsed, err := Parse(text)
		if err != nil {
			return nil, fmt.Errorf("parsing schema %d: %w: %v", id, ErrInvalidSchema, err)
		}
		c.mu.Lock()
		c.byID[id] = parsed
		c.mu.Unlock()
		return parsed, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(avro.Schema), nil
}

// Latest returns the id and text of the newest version under subject. It is
// not cached: it is asked when tables are applied, not per message.
func (c *Client) Latest(ctx context.Context, subject string) (int, string, error) {
	var id int
	text, err := call(ctx, func() (string, error) {
		s, err := c.sr.GetLatestSchema(subject)
		if err != nil {
			return "", err
		}
		id = s.ID()
		return s.Schema(), nil
	})
	if err != nil {
		return 0, "", fmt.Errorf("fetching latest schema of subject %s: %w", subject, err)
	}
	return id, text, nil
}

// Register registers an Avro schema under subject and returns its id (the
// existing id if the registry already has the same schema).
func (c *Client) Register(ctx context.Context, subject, text string) (int, error) {
	var id int
	_, err := call(ctx, func() (string, error) {
		s, err := c.sr.CreateSchema(subject, text, srclient.Avro)
		if err != nil {
			return "", err
		}
		id = s.ID()
		return "", nil
	})
	if err != nil {
		return 0, fmt.Errorf("registering schema under subject %s: %w", subject, err)
	}
	return id, nil
}

// call runs a blocking srclient call, giving up when ctx ends, and
// classifies its error.
func call(ctx context.Context, fn func() (string, error)) (string, error) {
	type result struct {
		s   string
		err error
	}
	ch := make(chan result, 1)
	go func() {
		s, err := fn()
		ch <- result{s, err}
	}()
	select {
	case <-ctx.Done():
		return "", fmt.Errorf("%w: %v", ErrUnavailable, ctx.Err())
	case r := <-ch:
		if r.err != nil {
			return "", redact.Error(classify(r.err))
		}
		return r.s, nil
	}
}

// classify maps srclient errors onto the package sentinels. The registry's
// JSON errors carry a Confluent error_code whose first three digits are the
// HTTP status (40403 = 404 schema not found); non-JSON errors carry only
// the status line.
func classify(err error) error {
	status := 0
	var se srclient.Error
	if errors.As(err, &se) {
		status = se.Code
		for status >= 1000 {
			status /= 10
		}
	} else if n, convErr := strconv.Atoi(strings.SplitN(err.Error(), " ", 2)[0]); convErr == nil {
		status = n
	}
	switch {
	case status == http.StatusNotFound:
		return fmt.Errorf("%w: %v", ErrNotFound, err)
	case status == http.StatusUnprocessableEntity:
		return fmt.Errorf("%w: %v", ErrInvalidSchema, err)
	}
	// 5xx, 429, 401/403 (credentials an operator can fix) and transport
	// failures all deserve a retry.
	return fmt.Errorf("%w: %v", ErrUnavailable, err)
}
