// Package redact removes secrets from text bqcdc prints: the user
// information of a URL (https://user:secret@host, as a Schema Registry URL
// may carry it), in a URL on its own, in any text quoting one (an error from
// an HTTP client library), and in errors. Every log line and every error
// that may quote a configured URL goes through it: package logging applies
// Text to every string it writes, package registry to every error it
// returns, and config.Config.Redacted to the registry URL.
//
// The whole user information becomes "xxxxx", whatever it holds: a user
// name is often an API key (Confluent Cloud's is), and a password holding a
// '/', '+', '@' or ':' must not leave a piece of itself behind. A URL whose
// user information cannot be told from the rest (a raw '/', '?' or '#' in
// a password) is refused by CheckURL where it is configured, so it never
// reaches a client that could quote it.
package redact

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"
)

// Mask replaces a secret.
const Mask = "xxxxx"

// URL returns raw with the user information masked. Text that does not
// parse as a URL is cleaned as Text cleans it.
func URL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || strings.ContainsAny(raw, " \t\r\n") {
		return maskAuthority(raw)
	}
	if u.User == nil {
		return Text(raw)
	}
	u.User = url.User(Mask)
	return u.String()
}

// maskAuthority masks, in a URL that does not parse (a password with a
// space, say), everything from "://" to the last '@': raw is one configured
// value, so any '@' in it may end its user information.
func maskAuthority(raw string) string {
	i := strings.Index(raw, "://")
	at := strings.LastIndexByte(raw, '@')
	if i <= 0 || at < i || strings.IndexFunc(raw[:i], notSchemeChar) >= 0 {
		return Text(raw) // not a URL: text that may quote some
	}
	return raw[:i+3] + Mask + raw[at:]
}

func notSchemeChar(r rune) bool {
	return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '+' || r == '.' || r == '-')
}

// ErrBadURL marks a configured URL CheckURL refuses; its errors never
// quote the URL (it may hold a password).
var ErrBadURL = errors.New("not a URL whose credentials can be kept out of logs")

// CheckURL refuses a URL that does not parse as an http or https URL with
// a host, or that holds an '@' after its host: a password with a raw '/',
// '?' or '#' ends the authority early and spills into the path, where no
// redaction could tell it from a path. The error does not quote the URL.
func CheckURL(raw string) error {
	u, err := url.Parse(raw)
	switch {
	case err != nil || strings.ContainsAny(raw, " \t\r\n"):
		return fmt.Errorf("%w: %s", ErrBadURL, "it does not parse; percent-encode '/', '?', '#', '@', ':', '%' and spaces in the user name and password")
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("%w: %s", ErrBadURL, "want an http:// or https:// URL")
	case u.Host == "":
		return fmt.Errorf("%w: %s", ErrBadURL, "it names no host")
	case strings.Contains(u.RawPath+u.Path+u.RawQuery+u.Fragment, "@"):
		return fmt.Errorf("%w: %s", ErrBadURL, "it holds '@' after the host: percent-encode '/', '?' and '#' in the user name and password")
	}
	return nil
}

// userinfo matches the user information of a URL inside any text: a scheme,
// "://" and everything up to the last "@" before white space, a quote or an
// angle bracket. That masks the host and path too when a path holds an '@'
// (rare in what bqcdc logs, and masking too much loses no secret), and it
// masks a password whatever it holds ('/', '+', ':' or '@' included).
var userinfo = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*://)[^\s"<>]*@`)

// Text returns s with the user information of every URL in it masked.
func Text(s string) string {
	if !strings.Contains(s, "://") || !strings.Contains(s, "@") {
		return s // the common case, without a regexp
	}
	return userinfo.ReplaceAllString(s, "${1}"+Mask+"@")
}

// Error returns err with its message cleaned by Text; errors.Is and
// errors.As still see the errors it wraps. A nil or clean error is
// returned as it is.
func Error(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	clean := Text(msg)
	if clean == msg {
		return err
	}
	return &redacted{msg: clean, err: err}
}

type redacted struct {
	msg string
	err error
}

func (r *redacted) Error() string { return r.msg }
func (r *redacted) Unwrap() error { return r.err }

// Is lets errors.Is(err, target) compare against the cleaned error too.
func (r *redacted) Is(target error) bool { return errors.Is(r.err, target) }
