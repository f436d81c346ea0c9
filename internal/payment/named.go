package payment

// TestModeName names the provider of rehearsals' payments in payment
// attempts: never the deployment's real provider.
const TestModeName = "test-mode"

// Named gives a provider another name (what payment attempts record), so
// that two providers of one kind — the real simulator and the test-mode
// one rehearsals pay with — are told apart.
func Named(p Provider, name string) Provider { return &named{Provider: p, name: name} }

type named struct {
	Provider
	name string
}

func (n *named) Name() string { return n.name }

// Unwrap returns the renamed provider.
func (n *named) Unwrap() Provider { return n.Provider }
