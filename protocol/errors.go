package protocol

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// FieldError is a decoding or validation failure that names the field at
// fault, as a JSON path such as "payload.patterns[1]".
type FieldError struct {
	Field   string
	Message string
}

func (e *FieldError) Error() string {
	if e.Field == "" {
		return e.Message
	}
	return e.Field + ": " + e.Message
}

func fieldErr(field, format string, args ...any) *FieldError {
	return &FieldError{Field: field, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode is a machine-readable error code of the service's HTTP and
// WebSocket API.
type ErrorCode string

// The error codes of the coordination service.
const (
	CodeSchemaInvalid            ErrorCode = "SCHEMA_INVALID"             // 400
	CodeUnauthenticated          ErrorCode = "UNAUTHENTICATED"            // 401
	CodeForbidden                ErrorCode = "FORBIDDEN"                  // 403
	CodeNotFound                 ErrorCode = "NOT_FOUND"                  // 404
	CodeMethodNotAllowed         ErrorCode = "METHOD_NOT_ALLOWED"         // 405
	CodeIDConflict               ErrorCode = "ID_CONFLICT"                // 409
	CodeClientSequenceRegression ErrorCode = "CLIENT_SEQUENCE_REGRESSION" // 409
	CodeUnknownEntity            ErrorCode = "UNKNOWN_ENTITY"             // 409
	CodeCursorTooOld             ErrorCode = "CURSOR_TOO_OLD"             // 410, to version-1 readers
	CodePayloadTooLarge          ErrorCode = "PAYLOAD_TOO_LARGE"          // 413
	CodeRateLimited              ErrorCode = "RATE_LIMITED"               // 429, the MCP endpoint's per-token limit
	CodeSlowConsumer             ErrorCode = "SLOW_CONSUMER"              // WebSocket close reason
	CodeUnavailable              ErrorCode = "UNAVAILABLE"                // 503, shutting down
	CodeInternal                 ErrorCode = "INTERNAL"                   // 500
)

// ErrorBody is the JSON body of every error answer: {"error":{"code","message"}}.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail is the inside of an ErrorBody.
type ErrorDetail struct {
	Code    ErrorCode `json:"code"`
	Message string    `json:"message"`
}

// decodeStrict decodes exactly one JSON value from data into v, refusing
// unknown fields and trailing data. prefix names where data sits in the
// enclosing document ("payload"), for error messages.
func decodeStrict(data []byte, v any, prefix string) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var perr *time.ParseError
		if errors.As(err, &perr) {
			if field := findBadTime(data); field != "" {
				return fieldErr(joinPath(prefix, field), "not an RFC 3339 time: %s", perr.Error())
			}
		}
		return jsonFieldError(err, prefix)
	}
	if len(bytes.TrimSpace(data[dec.InputOffset():])) != 0 {
		return fieldErr(prefix, "unexpected data after the JSON value")
	}
	return nil
}

// jsonFieldError turns an encoding/json error into a *FieldError with a path.
func jsonFieldError(err error, prefix string) error {
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	var fe *FieldError
	var b64 base64.CorruptInputError
	switch {
	case errors.As(err, &b64):
		// The protocol's only base64 field that encoding/json decodes is a frame's data.
		return fieldErr(joinPath(prefix, "data"), "not valid base64 (standard alphabet, padded): bad input at byte %d", int64(b64))
	case errors.As(err, &fe):
		return &FieldError{Field: joinPath(prefix, fe.Field), Message: fe.Message}
	case errors.As(err, &typeErr):
		return fieldErr(joinPath(prefix, typeErr.Field), "expected %s, got JSON %s", jsonKind(typeErr.Type.Kind().String()), typeErr.Value)
	case errors.As(err, &syntaxErr):
		return fieldErr(prefix, "malformed JSON at byte %d: %s", syntaxErr.Offset, syntaxErr.Error())
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return fieldErr(joinPath(prefix, name), "unknown field")
	case err.Error() == "EOF" || err.Error() == "unexpected EOF":
		return fieldErr(prefix, "truncated or empty JSON")
	}
	return fieldErr(prefix, "%s", strings.TrimPrefix(err.Error(), "json: "))
}

func joinPath(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "." + b
}

// findBadTime locates the first string field whose name ends in "At" and
// that does not parse as an RFC 3339 time. It runs only after decoding failed
// on a time, because encoding/json does not say which field that was.
func findBadTime(data []byte) string {
	var v any
	if json.Unmarshal(data, &v) != nil {
		return ""
	}
	var walk func(path string, v any) string
	walk = func(path string, v any) string {
		switch x := v.(type) {
		case map[string]any:
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				p := joinPath(path, k)
				if s, ok := x[k].(string); ok && strings.HasSuffix(k, "At") {
					var t time.Time
					if t.UnmarshalJSON([]byte(strconv.Quote(s))) != nil {
						return p
					}
				}
				if f := walk(p, x[k]); f != "" {
					return f
				}
			}
		case []any:
			for i, e := range x {
				if f := walk(fmt.Sprintf("%s[%d]", path, i), e); f != "" {
					return f
				}
			}
		}
		return ""
	}
	return walk("", v)
}

func jsonKind(goKind string) string {
	switch goKind {
	case "int", "int64", "int32", "uint", "uint64", "uint32":
		return "an integer"
	case "float64", "float32":
		return "a number"
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "slice", "array":
		return "an array"
	case "struct", "map", "ptr":
		return "an object"
	}
	return goKind
}
