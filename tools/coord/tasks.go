package coord

import (
	"context"
	"encoding/json"

	bc "github.com/crosscode/crosscode-mcp/bridge/coord"
	"github.com/crosscode/crosscode-mcp/protocol"
	"github.com/crosscode/crosscode-mcp/store"
	"github.com/crosscode/crosscode-mcp/tools"
)

type taskCreator interface {
	session
	CreateTask(ctx context.Context, title, description string, labels []string, assignee string, status protocol.TaskStatus) (*bc.Published, *protocol.Task, error)
}

type createTaskIn struct {
	Title       string              `json:"title"`
	Description string              `json:"description,omitempty"`
	Labels      []string            `json:"labels,omitempty"`
	Assignee    string              `json:"assignee,omitempty" jsonschema_description:"actorId to assign; yourself to take it."`
	Status      protocol.TaskStatus `json:"status,omitempty" jsonschema_description:"Default open."`
}

type taskOut struct {
	Task  TaskView `json:"task"`
	Write Write    `json:"write"`
	WithNews
}

// CreateTask is the create_task tool.
func CreateTask(c taskCreator) tools.Tool {
	return tools.New[createTaskIn, taskOut](Toolset, "create_task", "Create task",
		"Add a task to the workspace's shared task list, optionally assigned.",
		tools.Annotations{},
		handler(c, func(ctx context.Context, in createTaskIn) (*taskOut, error) {
			if in.Status != "" && !in.Status.Valid() {
				return nil, &bc.InputError{Message: "status must be open, in_progress, blocked, done or cancelled"}
			}
			pub, t, err := c.CreateTask(ctx, in.Title, in.Description, in.Labels, in.Assignee, in.Status)
			if err != nil {
				return nil, err
			}
			return &taskOut{Task: taskView(t, false), Write: write(pub)}, nil
		}))
}

type taskUpdater interface {
	session
	UpdateTask(ctx context.Context, id string, ch bc.TaskChange) (*bc.Published, *protocol.Task, error)
}

type updateTaskIn struct {
	TaskID      string               `json:"taskId"`
	Status      *protocol.TaskStatus `json:"status,omitempty"`
	Assignee    *string              `json:"assignee,omitempty" jsonschema_description:"actorId; empty string unassigns."`
	Title       *string              `json:"title,omitempty"`
	Description *string              `json:"description,omitempty"`
	Labels      []string             `json:"labels,omitempty" jsonschema_description:"Replaces the labels."`
}

// UpdateTask is the update_task tool.
func UpdateTask(c taskUpdater) tools.Tool {
	return tools.New[updateTaskIn, taskOut](Toolset, "update_task", "Update task",
		"Change a task's status, assignee, title, description or labels. Take a task by assigning yourself and setting in_progress.",
		tools.Annotations{Idempotent: true},
		handler(c, func(ctx context.Context, in updateTaskIn) (*taskOut, error) {
			if in.Status != nil && !in.Status.Valid() {
				return nil, &bc.InputError{Message: "status must be open, in_progress, blocked, done or cancelled"}
			}
			pub, t, err := c.UpdateTask(ctx, in.TaskID, bc.TaskChange{Title: in.Title, Description: in.Description, Assignee: in.Assignee, Status: in.Status, Labels: in.Labels})
			if err != nil {
				return nil, err
			}
			return &taskOut{Task: taskView(t, false), Write: write(pub)}, nil
		}))
}

type taskLister interface {
	session
	Workspace() string
	Entities(ctx context.Context, q store.EntityQuery) ([]*store.Entity, error)
}

type listTasksIn struct {
	Status   []protocol.TaskStatus `json:"status,omitempty" jsonschema_description:"Only these statuses. Default: open, in_progress, blocked."`
	Assignee string                `json:"assignee,omitempty"`
	Mine     bool                  `json:"mine,omitempty" jsonschema_description:"Only tasks assigned to you."`
	Before   int64                 `json:"before,omitempty" jsonschema_description:"Paging: nextBefore of the previous answer."`
	Limit    int                   `json:"limit,omitempty" jsonschema:"minimum=1,maximum=50" jsonschema_description:"Default 20."`
}

type listTasksOut struct {
	Tasks []TaskView `json:"tasks"`
	// NextBefore is set when there are more tasks: pass it as before.
	NextBefore int64 `json:"nextBefore,omitempty"`
	WithNews
}

// ListTasks is the list_tasks tool.
func ListTasks(c taskLister) tools.Tool {
	return tools.New[listTasksIn, listTasksOut](Toolset, "list_tasks", "List tasks",
		"The shared task list, newest first, by status and assignee.",
		tools.Annotations{ReadOnly: true, Idempotent: true},
		handler(c, func(ctx context.Context, in listTasksIn) (*listTasksOut, error) {
			status := []string{"open", "in_progress", "blocked"}
			if len(in.Status) > 0 {
				status = status[:0]
				for _, s := range in.Status {
					status = append(status, string(s))
				}
			}
			assignee := in.Assignee
			if in.Mine {
				assignee = c.Me(ctx).Actor
			}
			limit := in.Limit
			if limit <= 0 || limit > 50 {
				limit = 20
			}
			list, err := c.Entities(ctx, store.EntityQuery{Workspace: c.Workspace(), Kind: protocol.KindTask, Status: status, Target: assignee, Before: in.Before, Limit: limit + 1})
			if err != nil {
				return nil, err
			}
			more := len(list) > limit
			list = list[:min(len(list), limit)]
			out := &listTasksOut{Tasks: []TaskView{}}
			seqs := make([]int64, 0, len(list)) // of the tasks shown
			for _, e := range list {
				var t protocol.Task
				if json.Unmarshal(e.Body, &t) == nil {
					out.Tasks = append(out.Tasks, taskView(&t, true))
					seqs = append(seqs, e.CreatedSeq)
				}
			}
			var left int
			switch out.Tasks, left = tools.Fit(out.Tasks, listBudget); {
			case left > 0:
				out.NextBefore = seqs[len(out.Tasks)-1] // the rest on the next page
			case more:
				out.NextBefore = list[len(list)-1].CreatedSeq
			}
			return out, nil
		}))
}
