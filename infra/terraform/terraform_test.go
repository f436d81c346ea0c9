// Package terraform checks the Terraform configuration where no provider
// can be fetched (no registry here): every module's variables are declared
// where used and used where declared, every module call passes what the
// module requires and nothing it does not declare, and every module output
// read is one the module declares. `terraform fmt` runs in make test where
// terraform is installed.
package terraform

import (
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/stretchr/testify/require"
)

// config is one directory's .tf files: what it declares and uses.
type config struct {
	dir       string
	variables map[string]bool // name -> required (no default)
	outputs   map[string]bool
	used      map[string]hcl.Range // var.<name>
	calls     []call
	reads     []read // module.<name>.<output>
}

type call struct {
	name, source string
	args         []string
	rng          hcl.Range
}

type read struct {
	module, output string
	rng            hcl.Range
}

// meta are a module block's arguments that are not its variables.
var meta = []string{"source", "version", "providers", "depends_on", "count", "for_each"}

func load(t *testing.T, dir string) *config {
	t.Helper()
	c := &config{dir: dir, variables: map[string]bool{}, outputs: map[string]bool{}, used: map[string]hcl.Range{}}
	files, err := filepath.Glob(filepath.Join(dir, "*.tf"))
	require.NoError(t, err)
	require.NotEmpty(t, files, dir)
	for _, name := range files {
		src, err := os.ReadFile(name)
		require.NoError(t, err)
		f, diags := hclsyntax.ParseConfig(src, name, hcl.InitialPos)
		require.False(t, diags.HasErrors(), "%s: %s", name, diags.Error())
		c.body(f.Body.(*hclsyntax.Body), true)
	}
	return c
}

// body records body's declarations (at the top level) and every reference
// its expressions make, in nested blocks too.
func (c *config) body(b *hclsyntax.Body, top bool) {
	for _, a := range b.Attributes {
		c.expr(a.Expr)
	}
	for _, blk := range b.Blocks {
		switch {
		case top && blk.Type == "variable":
			_, hasDefault := blk.Body.Attributes["default"]
			c.variables[blk.Labels[0]] = !hasDefault
		case top && blk.Type == "output":
			c.outputs[blk.Labels[0]] = true
		case top && blk.Type == "module":
			k := call{name: blk.Labels[0], rng: blk.DefRange()}
			for name, a := range blk.Body.Attributes {
				if name == "source" {
					v, _ := a.Expr.Value(nil)
					k.source = v.AsString()
				} else if !slices.Contains(meta, name) {
					k.args = append(k.args, name)
				}
			}
			c.calls = append(c.calls, k)
		}
		c.body(blk.Body, false)
	}
}

func (c *config) expr(e hclsyntax.Expression) {
	for _, tr := range e.Variables() {
		switch tr.RootName() {
		case "var":
			if a, ok := tr[1].(hcl.TraverseAttr); ok {
				c.used[a.Name] = tr.SourceRange()
			}
		case "module":
			if len(tr) >= 3 {
				m, ok1 := tr[1].(hcl.TraverseAttr)
				o, ok2 := tr[2].(hcl.TraverseAttr)
				if ok1 && ok2 {
					c.reads = append(c.reads, read{module: m.Name, output: o.Name, rng: tr.SourceRange()})
				}
			}
		}
	}
}

func TestModulesAndTheirCallsAgree(t *testing.T) {
	dirs, err := filepath.Glob("modules/*")
	require.NoError(t, err)
	envs, err := filepath.Glob("environments/*")
	require.NoError(t, err)
	require.NotEmpty(t, dirs)
	require.NotEmpty(t, envs)
	configs := map[string]*config{}
	for _, d := range append(dirs, envs...) {
		abs, err := filepath.Abs(d)
		require.NoError(t, err)
		configs[abs] = load(t, d)
	}
	for _, c := range configs {
		t.Logf("%s: %d variables, %d outputs, %d module calls, %d outputs read", c.dir, len(c.variables), len(c.outputs), len(c.calls), len(c.reads))
		for name, rng := range c.used {
			require.Contains(t, c.variables, name, "%s: var.%s used and not declared", rng, name)
		}
		var unused []string
		for name := range c.variables {
			if _, ok := c.used[name]; !ok {
				unused = append(unused, name)
			}
		}
		sort.Strings(unused)
		require.Empty(t, unused, "%s declares variables it never uses", c.dir)

		called := map[string]*config{}
		for _, k := range c.calls {
			require.True(t, strings.HasPrefix(k.source, "../"), "%s: module %s from %q: only local modules here", k.rng, k.name, k.source)
			abs, err := filepath.Abs(filepath.Join(c.dir, k.source))
			require.NoError(t, err)
			m, ok := configs[abs]
			require.True(t, ok, "%s: module %s: no module at %s", k.rng, k.name, k.source)
			called[k.name] = m
			for _, a := range k.args {
				require.Contains(t, m.variables, a, "%s: module %s passes %s, which %s does not declare", k.rng, k.name, a, k.source)
			}
			for v, required := range m.variables {
				if required {
					require.Contains(t, k.args, v, "%s: module %s does not pass %s, which %s requires", k.rng, k.name, v, k.source)
				}
			}
		}
		for _, r := range c.reads {
			m, ok := called[r.module]
			require.True(t, ok, "%s: module.%s is not called here", r.rng, r.module)
			require.Contains(t, m.outputs, r.output, "%s: module.%s has no output %s", r.rng, r.module, r.output)
		}
	}
}
