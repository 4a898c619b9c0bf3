// Package redact removes secrets from text bqcdc prints: the password of a
// URL's user information (https://user:secret@host, as a Schema Registry URL
// may carry it), in a URL on its own, in any text quoting one (an error from
// an HTTP client library), and in errors. Every log line and every error
// that may quote a configured URL goes through it: package logging applies
// Text to every string it writes, package registry to every error it
// returns, and config.Config.Redacted to the registry URL.
//
// The password becomes "xxxxx", as net/url's URL.Redacted writes it; the
// user name is kept (it identifies the credential without granting it).
package redact

import (
	"errors"
	"net/url"
	"regexp"
	"strings"
)

// Mask replaces a secret.
const Mask = "xxxxx"

// URL returns raw with the password of its user information masked. Text
// that does not parse as a URL is still cleaned as Text cleans it.
func URL(raw string) string {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return maskAuthority(raw)
	case u.User == nil:
		return Text(raw)
	}
	if _, has := u.User.Password(); !has {
		return raw
	}
	return u.Redacted()
}

// maskAuthority masks, in a URL that does not parse (a password with a
// space, say), everything between the first ':' of the user information
// and the last '@' before the path.
func maskAuthority(raw string) string {
	i := strings.Index(raw, "://")
	if i <= 0 || strings.IndexFunc(raw[:i], notSchemeChar) >= 0 {
		return Text(raw) // not a URL: text that may quote some
	}
	rest := raw[i+3:]
	end := strings.IndexByte(rest, '/')
	if end < 0 {
		end = len(rest)
	}
	at := strings.LastIndexByte(rest[:end], '@')
	colon := strings.IndexByte(rest[:max(at, 0)], ':')
	if at < 0 || colon < 0 {
		return Text(raw)
	}
	return raw[:i+3] + rest[:colon+1] + Mask + rest[at:]
}

func notSchemeChar(r rune) bool {
	return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '+' || r == '.' || r == '-')
}

// userinfo matches the user information of a URL inside any text: a scheme,
// "://", a user name, ":", a password, "@". The password runs to the last
// "@" before the host (passwords may hold "@" when not escaped), and never
// across white space, quotes or a slash.
var userinfo = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*://[^\s/:@"'<>]*):[^\s/"'<>]*@`)

// Text returns s with the password of every URL in it masked.
func Text(s string) string {
	if !strings.Contains(s, "://") || !strings.Contains(s, "@") {
		return s // the common case, without a regexp
	}
	return userinfo.ReplaceAllString(s, "${1}:"+Mask+"@")
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
