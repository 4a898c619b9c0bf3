package formats_test

import (
	"errors"
	"fmt"
	"math/big"

	"github.com/bqcdc/bqcdc/internal/formats"
	"github.com/hamba/avro/v2"
)

func ExampleConnectSchemas_Decode() {
	msg := []byte(`{"schema":{"type":"struct","name":"shop.public.items.Value","fields":[
	  {"type":"int64","optional":false,"field":"id"},
	  {"type":"bytes","optional":true,"name":"org.apache.kafka.connect.data.Decimal","version":1,
	   "parameters":{"scale":"2","connect.decimal.precision":"8"},"field":"price"}]},
	 "payload":{"id":7,"price":"BNI="}}`)

	schemas := formats.NewConnectSchemas() // one per process: it caches Writers
	fmt.Println(formats.Detect(nil, msg))
	w, rec, err := schemas.Decode(msg)
	if errors.Is(err, formats.ErrNoSchema) {
		return // schemas.enable=false: use formats.SchemalessJSON(reader).Decode(msg)
	}
	if err != nil {
		panic(err) // classified: failure.IsPermanent(err)
	}
	fmt.Println(w.Schema.(*avro.RecordSchema).FullName(), rec["id"], rec["price"].(*big.Rat).FloatString(2))
	// Output:
	// debezium-json
	// shop.public.items.Value 7 12.34
}
