package coord

import (
	"context"

	bc "github.com/crosscode/crosscode-mcp/bridge/coord"
	"github.com/crosscode/crosscode-mcp/protocol"
	"github.com/crosscode/crosscode-mcp/tools"
)

type validationRecorder interface {
	session
	RecordValidation(ctx context.Context, v protocol.Validation) (*bc.Published, *protocol.Validation, error)
}

type recordValidationIn struct {
	Kind       protocol.ValidationKind   `json:"kind"`
	Name       string                    `json:"name" jsonschema_description:"What ran, e.g. the command: go test ./..."`
	Status     protocol.ValidationStatus `json:"status"`
	Summary    string                    `json:"summary,omitempty" jsonschema_description:"The result in a line or two: counts, the first failure."`
	Commit     string                    `json:"commit,omitempty" jsonschema_description:"Default: HEAD."`
	Paths      []string                  `json:"paths,omitempty" jsonschema_description:"What it covered."`
	TaskID     string                    `json:"taskId,omitempty"`
	DurationMs *int64                    `json:"durationMs,omitempty" jsonschema:"minimum=0"`
	CaptureOp  string                    `json:"captureOp,omitempty" jsonschema_description:"The capture op of a scenario or replay run."`
}

type recordValidationOut struct {
	ValidationID string `json:"validationId"`
	Write        Write  `json:"write"`
	WithNews
}

// RecordValidation is the record_validation tool.
func RecordValidation(c validationRecorder, repo Repo) tools.Tool {
	return tools.New[recordValidationIn, recordValidationOut](Toolset, "record_validation", "Record validation",
		"Share the result of a test, build, lint, scenario, replay or plays run: others see what passes at which commit.",
		tools.Annotations{},
		handler(c, func(ctx context.Context, in recordValidationIn) (*recordValidationOut, error) {
			if !in.Kind.Valid() || !in.Status.Valid() {
				return nil, &bc.InputError{Message: "kind must be test, build, lint, scenario, replay or other; status passed, failed, errored or skipped"}
			}
			commit := in.Commit
			if commit == "" && repo != nil {
				commit, _, _ = repo.Head(ctx)
			}
			pub, v, err := c.RecordValidation(ctx, protocol.Validation{Kind: in.Kind, Name: in.Name, Status: in.Status, Summary: in.Summary,
				Commit: commit, Paths: in.Paths, TaskID: in.TaskID, DurationMs: in.DurationMs, CaptureOp: in.CaptureOp})
			if err != nil {
				return nil, err
			}
			return &recordValidationOut{ValidationID: v.ID, Write: write(pub)}, nil
		}))
}
