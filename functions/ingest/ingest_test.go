package ingest

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestReadPush(t *testing.T) {
	const body = `{"message":{"data":"aGk=","attributes":{"a":"b"},"messageId":"42","publishTime":"2026-01-02T03:04:05Z","orderingKey":"k"},"subscription":"projects/p/subscriptions/s","deliveryAttempt":2}`
	tests := []struct {
		name    string
		path    string
		header  map[string]string
		body    string
		topic   string
		wantErr string
	}{
		{name: "push endpoint", path: "/projects/p/topics/db.inv.t", body: body, topic: "db.inv.t"},
		{name: "local path prefix", path: "/Ingest/projects/p/topics/t", body: body, topic: "t"},
		{name: "eventarc binary mode", path: "/", header: map[string]string{"Ce-Source": "//pubsub.googleapis.com/projects/p/topics/t2", "Ce-Id": "ce"}, body: body, topic: "t2"},
		{name: "no topic", path: "/", body: body, wantErr: "names no Pub/Sub topic"},
		// Read as sent: a%2Eb is a topic of its own, not a.b.
		{name: "escaped dot", path: "/projects/p/topics/a%2Eb", body: body, topic: "a%2Eb"},
		{name: "escaped slash", path: "/projects/p/topics/a%2Fb", body: body, topic: "a%2Fb"},
		{name: "plus and tilde", path: "/projects/p/topics/a+b~c", body: body, topic: "a+b~c"},
		{name: "not json", path: "/projects/p/topics/t", body: "nope", topic: "t", wantErr: "decoding the Pub/Sub push body"},
		{name: "no message", path: "/projects/p/topics/t", body: `{"subscription":"s"}`, topic: "t", wantErr: "no message"},
		{name: "too large", path: "/projects/p/topics/t", body: `{"message":{"data":"` + strings.Repeat("A", MaxBody) + `"}}`, topic: "t", wantErr: "larger than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, tt.path, strings.NewReader(tt.body))
			for k, v := range tt.header {
				r.Header.Set(k, v)
			}
			msg, err := ReadPush(r)
			if msg.Topic != tt.topic {
				t.Errorf("topic = %q, want %q", msg.Topic, tt.topic)
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				if len(msg.Data) == 0 {
					t.Error("the raw body is not kept for the dead letter")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(msg.Data) != "hi" || msg.MessageID != "42" || msg.Attributes["a"] != "b" || msg.OrderingKey != "k" ||
				msg.Subscription != "projects/p/subscriptions/s" || !msg.PublishTime.Equal(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)) {
				t.Errorf("message = %+v", msg)
			}
		})
	}
}
