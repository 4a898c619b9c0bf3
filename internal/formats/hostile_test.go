package formats_test

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/bqcdc/bqcdc/internal/failure"
	"github.com/bqcdc/bqcdc/internal/formats"
	"github.com/bqcdc/bqcdc/internal/limits"
)

// zz is the zig-zag varint encoding of n, as Avro writes int and long.
func zz(n int64) []byte { return binary.AppendVarint(nil, n) }

func cat(parts ...[]byte) []byte {
	var out []byte
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// Avro binary whose lengths and counts lie: each must fail fast, naming the
// bound, before hamba allocates what it declares.
func TestAvroBinaryBounds(t *testing.T) {
	const arrays = `{"type":"record","name":"R","fields":[
	 {"name":"longs","type":{"type":"array","items":"long"}},
	 {"name":"nulls","type":{"type":"array","items":"null"}},
	 {"name":"empties","type":{"type":"array","items":{"type":"record","name":"E","fields":[]}}},
	 {"name":"m","type":{"type":"map","values":"null"}},
	 {"name":"s","type":"string"}]}`
	w := formats.AvroBinary("test", parseSchema(t, []byte(arrays)))
	empty := []byte{0, 0, 0, 0, 0} // four empty blocks and an empty string
	// The zero-size cap binds in messages whose decoded-size budget pays
	// for that many items (limits.ItemCost each): 300 KB of bytes that the
	// validator never reaches raise the budget to about 19 MiB.
	pad := make([]byte, 300<<10)
	tests := []struct {
		name    string
		data    []byte
		limit   bool // wraps limits.ErrLimit
		eof     bool // wraps io.ErrUnexpectedEOF
		wantErr string
	}{
		{name: "array count 2^32", data: cat(zz(1<<32), []byte{2}), eof: true, wantErr: "array block count 4294967296"},
		{name: "array count 2^47", data: cat(zz(1<<47), []byte{2}), eof: true, wantErr: "array block count 140737488355328"},
		{name: "array count max int64", data: cat(zz(1<<63-1), []byte{2}), eof: true, wantErr: "array block count"},
		{name: "negative array count min int64", data: cat(zz(-1<<63), zz(1)), limit: true, wantErr: "overflows"},
		{name: "array block size beyond payload", data: cat(zz(-1), zz(1<<40), []byte{2}), eof: true, wantErr: "array block size"},
		{name: "zero-size items beyond the cap", data: cat([]byte{0}, zz(1<<40), []byte{0}, empty[2:], pad), limit: true, wantErr: "limited to 65536 per message"},
		{name: "empty records beyond the cap", data: cat([]byte{0, 0}, zz(limits.MaxZeroSizeItems+1), []byte{0}, empty[3:], pad), limit: true, wantErr: "zero bytes"},
		{name: "zero-size items across arrays", data: cat([]byte{0}, zz(limits.MaxZeroSizeItems), []byte{0}, zz(1), []byte{0}, empty[3:], pad), limit: true, wantErr: "zero bytes"},
		{name: "map count 2^40", data: cat([]byte{0, 0, 0}, zz(1<<40), []byte{2, 'k'}), eof: true, wantErr: "map block count"},
		{name: "string length 2^40", data: cat(empty[:4], zz(1<<40), []byte("abc")), eof: true, wantErr: "string length 1099511627776"},
		{name: "negative string length", data: cat(empty[:4], zz(-5)), wantErr: "negative"},
		{name: "varint overflow", data: cat(empty[:4], []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f}), limit: true, wantErr: "overflows 64 bits"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			_, err := w.Decode(tc.data)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error %v, want it to contain %q", err, tc.wantErr)
			}
			if tc.limit != errors.Is(err, limits.ErrLimit) {
				t.Errorf("errors.Is(%v, ErrLimit) = %t, want %t", err, !tc.limit, tc.limit)
			}
			if tc.eof != errors.Is(err, io.ErrUnexpectedEOF) {
				t.Errorf("errors.Is(%v, io.ErrUnexpectedEOF) = %t, want %t", err, !tc.eof, tc.eof)
			}
			if d := time.Since(start); d > time.Second {
				t.Errorf("took %v", d)
			}
		})
	}
	// What the bounds let through still decodes.
	ok := cat(zz(2), zz(7), zz(8), []byte{0}, zz(limits.MaxZeroSizeItems/2), []byte{0}, zz(3), []byte{0}, zz(1), zz(1), []byte{'k'}, []byte{0}, zz(int64(len(pad))), pad)
	rec, err := w.Decode(ok)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(rec["nulls"].([]any)); n != limits.MaxZeroSizeItems/2 {
		t.Errorf("%d nulls", n)
	}
}

// A recursive schema lets values nest as deep as the payload is long; the
// validator stops them before hamba recurses.
func TestAvroBinaryNesting(t *testing.T) {
	w := formats.AvroBinary("test", parseSchema(t, []byte(`{"type":"record","name":"Node","fields":[
	 {"name":"next","type":["null","Node"]}]}`)))
	deep := append(bytesOf(2, 100000), 0)
	_, err := w.Decode(deep)
	if !errors.Is(err, limits.ErrLimit) || !strings.Contains(err.Error(), "nest deeper than 64") {
		t.Fatalf("error %v", err)
	}
	if _, err := w.Decode(append(bytesOf(2, 20), 0)); err != nil {
		t.Fatal(err)
	}
}

func bytesOf(b byte, n int) []byte { return []byte(strings.Repeat(string(rune(b)), n)) }

// A 2 MiB TEXT column (beyond hamba's default 1 MiB) decodes: values up to
// Pub/Sub's message size are accepted.
func TestAvroBinaryLargeValue(t *testing.T) {
	w := formats.AvroBinary("test", parseSchema(t, []byte(`{"type":"record","name":"T","fields":[{"name":"text","type":"string"},{"name":"b","type":"bytes"}]}`)))
	text := strings.Repeat("x", 2<<20)
	data := cat(zz(int64(len(text))), []byte(text), zz(3<<20), make([]byte, 3<<20))
	rec, err := w.Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(rec["text"].(string)) != 2<<20 || len(rec["b"].([]byte)) != 3<<20 {
		t.Error("value cut")
	}
}

// A decimal scale declared in the writer schema is bounded before hamba
// computes 10^scale for a value.
func TestAvroBinaryDecimalScale(t *testing.T) {
	w := formats.AvroBinary("test", parseSchema(t, []byte(`{"type":"record","name":"D","fields":[
	 {"name":"d","type":{"type":"bytes","logicalType":"decimal","precision":200000000,"scale":100000000}}]}`)))
	_, err := w.Decode([]byte{2, 1})
	if !errors.Is(err, limits.ErrLimit) || !strings.Contains(err.Error(), "scale 1000") {
		t.Fatalf("error %v", err)
	}
}

func connectMessage(fields string, payload string) []byte {
	return []byte(`{"schema":{"type":"struct","name":"t.Value","optional":false,"fields":[` + fields + `]},"payload":` + payload + `}`)
}

// Sizes and parameters a Debezium JSON message declares are bounded before
// anything is computed from them.
func TestConnectBounds(t *testing.T) {
	deepSchema := strings.Repeat(`{"type":"struct","optional":false,"field":"f","fields":[`, 3000) + `{"type":"int32","field":"x"}` + strings.Repeat(`]}`, 3000)
	many := make([]string, maxFieldsForTest())
	for i := range many {
		many[i] = fmt.Sprintf(`{"type":"int32","optional":true,"field":"f%d"}`, i)
	}
	tests := []struct {
		name    string
		msg     []byte
		stage   failure.Stage
		wantErr string
	}{
		{name: "decimal scale 10^8", msg: connectMessage(`{"type":"bytes","optional":false,"name":"org.apache.kafka.connect.data.Decimal","parameters":{"scale":"100000000"},"field":"d"}`, `{"d":1}`),
			stage: failure.StageRegistry, wantErr: "scale 100000000"},
		{name: "decimal precision 10^8", msg: connectMessage(`{"type":"bytes","optional":false,"name":"org.apache.kafka.connect.data.Decimal","parameters":{"scale":"2","connect.decimal.precision":"100000000"},"field":"d"}`, `{"d":1}`),
			stage: failure.StageRegistry, wantErr: "precision 100000000"},
		{name: "bits length 2^31-1", msg: connectMessage(`{"type":"bytes","optional":false,"name":"io.debezium.data.Bits","parameters":{"length":"2147483647"},"field":"b"}`, `{"b":"AQ=="}`),
			stage: failure.StageRegistry, wantErr: "Bits length"},
		{name: "nested 3000 levels", msg: connectMessage(deepSchema, `{}`), stage: failure.StageRegistry, wantErr: "nests deeper than 128"},
		{name: "a struct wider than any source table", msg: connectMessage(strings.Join(many, ","), `{}`), stage: failure.StageRegistry, wantErr: "a struct of 20257 fields"},
		{name: "too many fields in all", msg: connectMessage(strings.Repeat(`{"type":"struct","optional":true,"field":"s","fields":[`+strings.Join(many[:4000], ",")+`]},`, 6)+`{"type":"int32","field":"x"}`, `{}`),
			stage: failure.StageRegistry, wantErr: "more than 20256 struct fields"},
		{name: "3-million-digit number", msg: connectMessage(`{"type":"int64","optional":false,"field":"n"}`, `{"n":`+strings.Repeat("9", 3_000_000)+`}`),
			stage: failure.StageDecode, wantErr: "longer than 1024 characters"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			_, _, err := formats.NewConnectSchemas().Decode(tc.msg)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error %v, want it to contain %q", err, tc.wantErr)
			}
			if !errors.Is(err, limits.ErrLimit) || !failure.IsPermanent(err) || failure.StageOf(err) != tc.stage {
				t.Errorf("error %v: want a permanent %s error wrapping ErrLimit", err, tc.stage)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("took %v", d)
			}
		})
	}
}

func maxFieldsForTest() int { return 2*limits.MaxColumns + 257 }

// The widest decimal a source writes still decodes.
func TestConnectWideDecimal(t *testing.T) {
	digits := strings.Repeat("9", 990)
	msg := connectMessage(`{"type":"bytes","optional":false,"name":"org.apache.kafka.connect.data.Decimal","parameters":{"scale":"10","connect.decimal.precision":"1000"},"field":"d"}`,
		`{"d":`+digits+`.1234567891}`)
	if _, _, err := formats.NewConnectSchemas().Decode(msg); err != nil {
		t.Fatal(err)
	}
	b64 := base64.StdEncoding.EncodeToString([]byte{1})
	msg = connectMessage(`{"type":"bytes","optional":false,"name":"io.debezium.data.Bits","parameters":{"length":"83886080"},"field":"b"}`, `{"b":"`+b64+`"}`)
	if _, _, err := formats.NewConnectSchemas().Decode(msg); err != nil {
		t.Fatal(err)
	}
}

// The Connect schema cache is bounded however many distinct schemas come.
func TestConnectSchemasBounded(t *testing.T) {
	cs := formats.NewConnectSchemas()
	for i := range 1000 {
		msg := connectMessage(fmt.Sprintf(`{"type":"int32","optional":false,"field":"f%d"}`, i), fmt.Sprintf(`{"f%d":1}`, i))
		if _, _, err := cs.Decode(msg); err != nil {
			t.Fatal(err)
		}
	}
	if texts, writers := cs.Len(); texts > 256 || writers > 128 {
		t.Errorf("cache holds %d texts and %d writers", texts, writers)
	}
}
