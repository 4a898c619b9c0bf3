// Package proof lets ingest tell a message `bqcdc replay` published from
// one any other publisher made up. A replayed message carries the attribute
// catalog.ReplayOfAttribute naming the id of the message it replays, and
// ingest stores the row under that id, so the views count a replay once.
// Whoever may publish to a topic could otherwise set the attribute too and
// have a row counted under another message's id (hiding that message's
// change behind its own, for example).
//
// So replay signs what it publishes with a key only it and the ingest
// function hold (a Secret Manager secret in production, BQCDC_REPLAY_KEY),
// and ingest honours the attribute only when the signature in
// catalog.ReplayProofAttribute verifies. The MAC (HMAC-SHA256) covers the
// topic, the original message id and the SHA-256 of the data: a proof
// cannot be moved to other bytes, another id or another topic (the topic
// decides the changelog, so a proof copied to a second topic would
// otherwise claim an id there too). SignAt's proof covers the original
// message's publish time as well (catalog.ReplayPublishTimeAttribute), which
// ingest then stores and sequences a replayed plain record by, so an old
// dead letter is not taken for the newest change of its key. The package is
// pure: no clients.
package proof

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"hash"
	"strconv"
	"time"
)

// MinKeyLen is the shortest key accepted: HMAC-SHA256 is as strong as its
// key up to 32 bytes (`openssl rand -base64 32` gives 44 characters).
const MinKeyLen = 32

// version is mixed into every MAC, so a later scheme never verifies as this
// one; versionAt is the scheme that covers the publish time too.
const (
	version   = "bqcdc-replay-v1"
	versionAt = "bqcdc-replay-v2"
)

// Sign returns the proof that data, published to topic, replays the
// message originalID. It is URL-safe base64 (an attribute value).
func Sign(key []byte, topic, originalID string, data []byte) string {
	return base64.RawURLEncoding.EncodeToString(mac(key, topic, originalID, data))
}

// Verify reports whether proof is Sign's for these values and key. An
// empty key verifies nothing.
func Verify(key []byte, topic, originalID string, data []byte, proof string) bool {
	if len(key) == 0 || proof == "" {
		return false
	}
	got, err := base64.RawURLEncoding.DecodeString(proof)
	if err != nil {
		return false
	}
	return hmac.Equal(got, mac(key, topic, originalID, data))
}

// SignAt is Sign covering the original message's publish time too, given
// as FormatTime writes it (the attribute's text is what is signed).
func SignAt(key []byte, topic, originalID, publishTime string, data []byte) string {
	return base64.RawURLEncoding.EncodeToString(macAt(key, topic, originalID, publishTime, data))
}

// VerifyAt reports whether proof is SignAt's for these values and key.
func VerifyAt(key []byte, topic, originalID, publishTime string, data []byte, proof string) bool {
	if len(key) == 0 || proof == "" {
		return false
	}
	got, err := base64.RawURLEncoding.DecodeString(proof)
	if err != nil {
		return false
	}
	return hmac.Equal(got, macAt(key, topic, originalID, publishTime, data))
}

// FormatTime writes a publish time for the attribute: microseconds since
// the Unix epoch, in decimal (exact, and what _cdc_publish_time holds).
func FormatTime(t time.Time) string { return strconv.FormatInt(t.UnixMicro(), 10) }

// ParseTime reads FormatTime's text.
func ParseTime(s string) (time.Time, error) {
	us, err := strconv.ParseInt(s, 10, 64)
	if err != nil || us <= 0 || us > 253402300799999999 {
		return time.Time{}, errors.New("want microseconds since the Unix epoch, within BigQuery's TIMESTAMP range")
	}
	return time.UnixMicro(us).UTC(), nil
}

func macAt(key []byte, topic, originalID, publishTime string, data []byte) []byte {
	digest := sha256.Sum256(data)
	h := hmac.New(sha256.New, key)
	h.Write([]byte(versionAt))
	field(h, topic)
	field(h, originalID)
	field(h, publishTime)
	h.Write(digest[:])
	return h.Sum(nil)
}

// mac covers each field with its length first, so no two different
// (topic, id) pairs give the same input.
func mac(key []byte, topic, originalID string, data []byte) []byte {
	digest := sha256.Sum256(data)
	h := hmac.New(sha256.New, key)
	h.Write([]byte(version))
	field(h, topic)
	field(h, originalID)
	h.Write(digest[:])
	return h.Sum(nil)
}

func field(h hash.Hash, s string) {
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(s)))
	h.Write(n[:])
	h.Write([]byte(s))
}
