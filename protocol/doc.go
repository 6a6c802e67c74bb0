// Package protocol holds the wire types of the coordination protocol
// (daemon <-> coordination service) with strict decoding and generated JSON
// Schemas. The Go types here are the single source of truth; the schemas under
// protocol/schema are generated from them (go generate ./protocol).
//
// Decoding is strict: unknown fields, a schemaVersion other than 1, an
// envelope id that differs from payload.id, a type that does not fit the
// endpoint, bad enum values and bad times are rejected with a *FieldError that
// names the offending field.
package protocol

//go:generate env UPDATE_SCHEMAS=1 go test -run TestSchemasUpToDate .
