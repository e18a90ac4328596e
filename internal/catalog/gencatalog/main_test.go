package main

import (
	"bytes"
	"os"
	"testing"
)

// TestEmbeddedCatalogIsGenerated checks that the committed catalog is what
// the research table generates, so that no hand edit slips into it.
func TestEmbeddedCatalogIsGenerated(t *testing.T) {
	const table = "../research/catalog_rows.csv"
	var got bytes.Buffer
	if err := run(table, &got); err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("../default.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want) {
		t.Error("internal/catalog/default.yaml differs from what gencatalog generates; run:\n  go run ./internal/catalog/gencatalog > internal/catalog/default.yaml")
	}
}

func TestRejectsTableWithoutColumns(t *testing.T) {
	p := t.TempDir() + "/t.csv"
	if err := os.WriteFile(p, []byte("provider,offer_id\nA,b\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := run(p, &bytes.Buffer{}); err == nil {
		t.Error("a table missing columns was accepted")
	}
}
