package pubsubschema_test

import "github.com/bqcdc/bqcdc/internal/dev/avrocases"

// The shared test records (package avrocases), under this file's names.
const customerV2 = avrocases.CustomerV2

var customerV1 = avrocases.CustomerV1

type (
	customer = avrocases.Customer
	address  = avrocases.Address
)

var avroJSONCases = avrocases.JSONCases

func ptr[T any](v T) *T { return &v }
