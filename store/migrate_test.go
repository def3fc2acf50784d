package store

import (
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
)

// edge is a migration step for tests.
type edge struct{ from, to int }

// tagStep returns a step that appends "from>to" to the []any it is given.
func tagStep(e edge) func(any) (any, error) {
	return func(doc any) (any, error) {
		return append(doc.([]any), fmt.Sprintf("%d>%d", e.from, e.to)), nil
	}
}

func migrations(t *testing.T, edges ...edge) *Migrations {
	t.Helper()
	var m Migrations
	for _, e := range edges {
		if err := m.Register(e.from, e.to, tagStep(e)); err != nil {
			t.Fatalf("Register(%d, %d): %v", e.from, e.to, err)
		}
	}
	return &m
}

func TestMigrationsRegister(t *testing.T) {
	step := func(doc any) (any, error) { return doc, nil }
	tests := []struct {
		name     string
		from, to int
		fn       func(any) (any, error)
		wantErr  bool
	}{
		{name: "forward", from: 1, to: 2, fn: step},
		{name: "backward", from: 3, to: 1, fn: step},
		{name: "jump", from: 1, to: 9, fn: step},
		{name: "reverse of a registered step", from: 2, to: 1, fn: step},
		{name: "duplicate", from: 1, to: 2, fn: step, wantErr: true},
		{name: "to itself", from: 4, to: 4, fn: step, wantErr: true},
		{name: "nil function", from: 5, to: 6, fn: nil, wantErr: true},
		{name: "version zero", from: 0, to: 1, fn: step, wantErr: true},
		{name: "negative version", from: 1, to: -2, fn: step, wantErr: true},
	}
	var m Migrations // the cases run in order, on one set
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := m.Register(tt.from, tt.to, tt.fn)
			if (err != nil) != tt.wantErr {
				t.Fatalf("Register(%d, %d) = %v, want error %v", tt.from, tt.to, err, tt.wantErr)
			}
			if err != nil {
				t.Logf("%v", err)
			}
		})
	}
	// The refused steps were not added.
	for _, e := range []edge{{4, 4}, {5, 6}, {0, 1}, {1, -2}} {
		if _, ok := m.steps[e.from][e.to]; ok {
			t.Errorf("refused step %d to %d was registered", e.from, e.to)
		}
	}
}

func TestMigrationsPath(t *testing.T) {
	tests := []struct {
		name      string
		edges     []edge
		from, to  int
		want      []int
		wantReach []int // when there is no path
	}{
		{name: "one step", edges: []edge{{1, 2}}, from: 1, to: 2, want: []int{1, 2}},
		{name: "chain", edges: []edge{{1, 2}, {2, 3}, {3, 4}}, from: 1, to: 4, want: []int{1, 2, 3, 4}},
		{name: "shortcut over a longer chain", edges: []edge{{1, 2}, {2, 3}, {3, 4}, {4, 5}, {2, 5}}, from: 1, to: 5, want: []int{1, 2, 5}},
		{name: "direct step over a chain", edges: []edge{{1, 2}, {2, 3}, {3, 4}, {1, 4}}, from: 1, to: 4, want: []int{1, 4}},
		{name: "shortest found though registered last", edges: []edge{{1, 5}, {5, 6}, {6, 7}, {7, 8}, {1, 3}, {3, 8}}, from: 1, to: 8, want: []int{1, 3, 8}},
		{name: "tie goes to lower versions", edges: []edge{{1, 3}, {3, 4}, {1, 2}, {2, 4}}, from: 1, to: 4, want: []int{1, 2, 4}},
		{name: "backward", edges: []edge{{3, 2}, {2, 1}}, from: 3, to: 1, want: []int{3, 2, 1}},
		{name: "through a higher version", edges: []edge{{1, 9}, {9, 2}}, from: 1, to: 2, want: []int{1, 9, 2}},
		{name: "cycle", edges: []edge{{1, 2}, {2, 1}, {2, 3}, {3, 1}}, from: 1, to: 3, want: []int{1, 2, 3}},
		{name: "self-reachable cycle to the target", edges: []edge{{1, 2}, {2, 3}, {3, 1}, {3, 4}}, from: 2, to: 4, want: []int{2, 3, 4}},
		{name: "dead end skipped", edges: []edge{{1, 2}, {1, 3}, {3, 4}}, from: 1, to: 4, want: []int{1, 3, 4}},
		{name: "same version", edges: nil, from: 7, to: 7, want: []int{7}},
		{name: "same version in a cycle", edges: []edge{{1, 2}, {2, 1}}, from: 1, to: 1, want: []int{1}},
		{name: "no steps", edges: nil, from: 1, to: 2, wantReach: []int{}},
		{name: "only steps elsewhere", edges: []edge{{2, 3}}, from: 1, to: 3, wantReach: []int{}},
		{name: "wrong direction", edges: []edge{{2, 1}}, from: 1, to: 2, wantReach: []int{}},
		{name: "unreachable beyond a cycle", edges: []edge{{1, 2}, {2, 3}, {3, 1}, {4, 5}}, from: 1, to: 5, wantReach: []int{2, 3}},
		{name: "unreachable from a dead end", edges: []edge{{1, 2}, {2, 3}, {1, 4}}, from: 1, to: 5, wantReach: []int{2, 3, 4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := migrations(t, tt.edges...)
			got, err := m.Path(tt.from, tt.to)
			if tt.wantReach != nil {
				if !errors.Is(err, ErrNoMigration) {
					t.Fatalf("Path(%d, %d) = %v, %v; want an error wrapping ErrNoMigration", tt.from, tt.to, got, err)
				}
				var np *noPathError
				if !errors.As(err, &np) {
					t.Fatalf("Path(%d, %d) error %v is not a *noPathError", tt.from, tt.to, err)
				}
				if np.from != tt.from || np.to != tt.to || !slicesEqual(np.reachable, tt.wantReach) {
					t.Errorf("Path(%d, %d) error names %d to %d, reachable %v; want %d to %d, reachable %v",
						tt.from, tt.to, np.from, np.to, np.reachable, tt.from, tt.to, tt.wantReach)
				}
				t.Logf("%v", err)
				return
			}
			if err != nil {
				t.Fatalf("Path(%d, %d): %v", tt.from, tt.to, err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Path(%d, %d) = %v, want %v", tt.from, tt.to, got, tt.want)
			}
		})
	}
}

func TestMigrationsNil(t *testing.T) {
	var m *Migrations
	if got, err := m.Path(3, 3); err != nil || !reflect.DeepEqual(got, []int{3}) {
		t.Errorf("nil Path(3, 3) = %v, %v; want [3], nil", got, err)
	}
	if got, err := m.Path(1, 2); !errors.Is(err, ErrNoMigration) {
		t.Errorf("nil Path(1, 2) = %v, %v; want an error wrapping ErrNoMigration", got, err)
	}
	if got, err := m.Apply("doc", 2, 2); err != nil || got != "doc" {
		t.Errorf(`nil Apply("doc", 2, 2) = %v, %v; want "doc", nil`, got, err)
	}
	if got, err := m.Apply("doc", 1, 2); !errors.Is(err, ErrNoMigration) || got != nil {
		t.Errorf(`nil Apply("doc", 1, 2) = %v, %v; want nil and an error wrapping ErrNoMigration`, got, err)
	}
}

func TestMigrationsApply(t *testing.T) {
	errBoom := errors.New("boom")
	tests := []struct {
		name     string
		edges    []edge
		failing  *edge // registered with a function that fails
		from, to int
		want     []any // the steps run, in order
		wantErr  error
		wantStep edge // the step a *MigrationError names
	}{
		{name: "chain", edges: []edge{{1, 2}, {2, 3}}, from: 1, to: 3, want: []any{"1>2", "2>3"}},
		{name: "shortest", edges: []edge{{1, 2}, {2, 3}, {3, 4}, {1, 3}}, from: 1, to: 4, want: []any{"1>3", "3>4"}},
		{name: "cycle", edges: []edge{{1, 2}, {2, 1}, {2, 3}}, from: 2, to: 3, want: []any{"2>3"}},
		{name: "same version", edges: []edge{{1, 2}}, from: 2, to: 2, want: []any{}},
		{name: "unreachable", edges: []edge{{1, 2}, {3, 4}}, from: 1, to: 4, wantErr: ErrNoMigration},
		{name: "first step fails", edges: []edge{{2, 3}}, failing: &edge{1, 2}, from: 1, to: 3, wantErr: errBoom, wantStep: edge{1, 2}},
		{name: "middle step fails", edges: []edge{{1, 2}, {3, 4}}, failing: &edge{2, 3}, from: 1, to: 4, wantErr: errBoom, wantStep: edge{2, 3}},
		{name: "failing step avoided", edges: []edge{{1, 2}, {2, 4}}, failing: &edge{3, 4}, from: 1, to: 4, want: []any{"1>2", "2>4"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := migrations(t, tt.edges...)
			if tt.failing != nil {
				if err := m.Register(tt.failing.from, tt.failing.to, func(any) (any, error) {
					return nil, fmt.Errorf("converting the document: %w", errBoom)
				}); err != nil {
					t.Fatal(err)
				}
			}
			got, err := m.Apply([]any{}, tt.from, tt.to)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("Apply(%d, %d) = %v, %v; want an error wrapping %v", tt.from, tt.to, got, err, tt.wantErr)
				}
				if got != nil {
					t.Errorf("Apply(%d, %d) = %v with an error, want no value", tt.from, tt.to, got)
				}
				var me *MigrationError
				if errors.As(err, &me) != (tt.wantStep != edge{}) {
					t.Errorf("Apply(%d, %d) error %v: MigrationError %v, want one: %v", tt.from, tt.to, err, me, tt.wantStep != edge{})
				}
				if me != nil && (edge{me.From, me.To}) != tt.wantStep {
					t.Errorf("Apply(%d, %d) error names step %d to %d, want %d to %d", tt.from, tt.to, me.From, me.To, tt.wantStep.from, tt.wantStep.to)
				}
				t.Logf("%v", err)
				return
			}
			if err != nil {
				t.Fatalf("Apply(%d, %d): %v", tt.from, tt.to, err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Apply(%d, %d) = %v, want %v", tt.from, tt.to, got, tt.want)
			}
		})
	}
}

func TestMigrationsStepsAfterFailureDoNotRun(t *testing.T) {
	errBoom := errors.New("boom")
	var m Migrations
	ran := []int{}
	for v := 1; v < 5; v++ {
		fn := func(doc any) (any, error) {
			ran = append(ran, v)
			if v == 2 {
				return nil, errBoom
			}
			return doc, nil
		}
		if err := m.Register(v, v+1, fn); err != nil {
			t.Fatal(err)
		}
	}
	_, err := m.Apply("doc", 1, 5)
	if !errors.Is(err, errBoom) {
		t.Fatalf("Apply(1, 5) error %v does not wrap the step's error", err)
	}
	if want := []int{1, 2}; !reflect.DeepEqual(ran, want) {
		t.Errorf("steps run from versions %v, want %v", ran, want)
	}
}

func TestMigrationsConcurrent(t *testing.T) {
	m := migrations(t, edge{1, 2}, edge{2, 3})
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				got, err := m.Apply([]any{}, 1, 3)
				if err != nil {
					errs <- err
					return
				}
				if want := []any{"1>2", "2>3"}; !reflect.DeepEqual(got, want) {
					errs <- fmt.Errorf("Apply(1, 3) = %v, want %v", got, want)
					return
				}
				// Others register while these apply.
				if err := m.Register(10+g, 1000+i, tagStep(edge{10 + g, 1000 + i})); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
