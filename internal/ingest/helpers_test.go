package ingest

import (
	"os"
	"testing"
)

// customersAvsc is the demo customers value schema, a Debezium MySQL
// envelope: the changelog the fake tables hold and, edited, the writer
// versions the tests register.
func customersAvsc(t testing.TB) []byte {
	t.Helper()
	text, err := os.ReadFile("../../schemas/dbserver1.inventory.customers-value.avsc")
	if err != nil {
		t.Fatal(err)
	}
	return text
}
