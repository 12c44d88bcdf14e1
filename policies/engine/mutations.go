package engine

import "context"

// Mutations evaluates req for the mutating webhook and returns what to apply.
// Violations are left to the validating pass, which sees the mutated object.
func (e *Engine) Mutations(ctx context.Context, req *Request) (*Mutation, error) {
	r := *req
	r.MutationOnly = true
	d, err := e.Decide(ctx, &r)
	if err != nil {
		return nil, err
	}
	return &d.Mutation, nil
}
