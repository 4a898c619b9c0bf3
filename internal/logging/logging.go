// Package logging configures structured JSON logs in the shape Cloud Logging
// reads from Cloud Run: "severity" and "message" fields.
package logging

import (
	"io"
	"log/slog"

	"github.com/bqcdc/bqcdc/internal/redact"
)

// New returns a JSON logger writing to w.
func New(w io.Writer) *slog.Logger {
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			a = redactAttr(a)
			if len(groups) > 0 {
				return a
			}
			switch a.Key {
			case slog.LevelKey:
				a.Key = "severity"
				if l, ok := a.Value.Any().(slog.Level); ok && l == slog.LevelWarn {
					a.Value = slog.StringValue("WARNING")
				}
			case slog.MessageKey:
				a.Key = "message"
			case slog.TimeKey:
				a.Key = "time"
			}
			return a
		},
	}))
}

// redactAttr masks URL passwords in every string and error a log line
// carries (package redact), whichever code logs them: an error from an HTTP
// client may quote a configured URL with its credentials.
func redactAttr(a slog.Attr) slog.Attr {
	switch a.Value.Kind() {
	case slog.KindString:
		if s := a.Value.String(); redact.Text(s) != s {
			a.Value = slog.StringValue(redact.Text(s))
		}
	case slog.KindAny:
		switch v := a.Value.Any().(type) {
		case error:
			a.Value = slog.AnyValue(redact.Error(v))
		case []string:
			out := make([]string, len(v))
			for i, s := range v {
				out[i] = redact.Text(s)
			}
			a.Value = slog.AnyValue(out)
		}
	}
	return a
}
