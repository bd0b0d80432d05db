package artifact

import (
	"fmt"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Load reads and validates the manifest at path; see [Parse]. Its errors are *[ConfigError]s.
func Load(path string, subcommands []string) (*Artifact, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &ConfigError{err}
	}
	a, err := Parse(data, subcommands)
	if err != nil {
		return nil, &ConfigError{fmt.Errorf("%s: %w", path, err)}
	}
	return a, nil
}

// Parse decodes and validates a manifest. subcommands are the fgn subcommands a claim's command
// may name. Errors name the offending line.
func Parse(data []byte, subcommands []string) (*Artifact, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, err
	}
	if len(root.Content) == 0 {
		return nil, fmt.Errorf("empty manifest")
	}
	doc := root.Content[0]
	if err := checkFields(doc, reflect.TypeFor[Artifact](), "artifact"); err != nil {
		return nil, err
	}
	a := &Artifact{}
	if err := doc.Decode(a); err != nil {
		return nil, err
	}
	claimNodes := value(doc, "claims")
	if claimNodes == nil || len(a.Claims) == 0 {
		return nil, fmt.Errorf("line %d: the manifest lists no claims", doc.Line)
	}
	datasets := map[string]bool{}
	for _, d := range a.Data {
		datasets[d.Name] = true
	}
	ids := map[string]int{}
	for i := range a.Claims {
		c, n := &a.Claims[i], claimNodes.Content[i]
		c.line = n.Line
		if err := c.validate(n, subcommands, datasets, a.Profiles); err != nil {
			return nil, err
		}
		if prev, ok := ids[c.ID]; ok {
			return nil, fmt.Errorf("line %d: claim id %q already used on line %d", n.Line, c.ID, prev)
		}
		ids[c.ID] = n.Line
	}
	return a, nil
}

// lineOf returns the line of the key's value in mapping n, or of n itself when the key is absent.
func lineOf(n *yaml.Node, key string) int {
	if v := value(n, key); v != nil {
		return v.Line
	}
	return n.Line
}

// value returns the value node of key in mapping n, or nil.
func value(n *yaml.Node, key string) *yaml.Node {
	if n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// checkFields reports the first mapping key in n that has no field in t (recursively).
func checkFields(n *yaml.Node, t reflect.Type, where string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return fmt.Errorf("line %d: %s: want a mapping", n.Line, where)
		}
		fields := map[string]reflect.Type{}
		var names []string
		for f := range t.Fields() {
			if tag, _, _ := strings.Cut(f.Tag.Get("yaml"), ","); tag != "" && tag != "-" {
				fields[tag] = f.Type
				names = append(names, tag)
			}
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			ft, ok := fields[k.Value]
			if !ok {
				return fmt.Errorf("line %d: unknown field %q in %s (known: %s)", k.Line, k.Value, where, strings.Join(names, ", "))
			}
			if err := checkFields(n.Content[i+1], ft, where+"."+k.Value); err != nil {
				return err
			}
		}
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			return fmt.Errorf("line %d: %s: want a list", n.Line, where)
		}
		for i, e := range n.Content {
			if err := checkFields(e, t.Elem(), fmt.Sprintf("%s[%d]", where, i)); err != nil {
				return err
			}
		}
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			return fmt.Errorf("line %d: %s: want a mapping", n.Line, where)
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			if err := checkFields(n.Content[i+1], t.Elem(), where+"."+n.Content[i].Value); err != nil {
				return err
			}
		}
	default:
		if n.Kind != yaml.ScalarNode {
			return fmt.Errorf("line %d: %s: want a single value", n.Line, where)
		}
	}
	return nil
}

// validate checks one claim; n is its mapping node.
func (c *Claim) validate(n *yaml.Node, subcommands []string, datasets map[string]bool, profiles map[string]Profile) error {
	fail := func(key, format string, args ...any) error {
		return fmt.Errorf("line %d: claim %q: %s", lineOf(n, key), c.ID, fmt.Sprintf(format, args...))
	}
	if c.ID == "" {
		return fmt.Errorf("line %d: claim without an id", n.Line)
	}
	if c.Reference == "" || c.Statement == "" {
		return fail("id", "needs the paper's reference and statement")
	}
	if _, err := ParseCommand(c.Command, subcommands); err != nil {
		return fail("command", "%v", err)
	}
	for _, p := range c.Profiles {
		if _, ok := profiles[p]; !ok {
			return fail("profiles", "unknown profile %q (not in the profiles section)", p)
		}
	}
	for _, r := range c.Requires {
		if !datasets[r] {
			return fail("requires", "requires unknown data set %q (not in the data section)", r)
		}
	}
	if c.Output == GoTest {
		switch {
		case !strings.HasPrefix(c.Command, "go test"):
			return fail("output", "output %q needs a go test command", GoTest)
		case c.Expected != "pass":
			return fail("expected", "a %s claim expects \"pass\" (the tests assert their own tolerances)", GoTest)
		case c.Tolerance != nil:
			return fail("tolerance", "a %s claim takes no tolerance (the tests assert their own)", GoTest)
		}
		return nil
	}
	order, _ := parseOrdering(c.Expected)
	repeatedOrder := c.Measure.Repeated && order != nil
	switch {
	case c.Expected == NotReached && c.Tolerance != nil:
		return fail("tolerance", "a %q claim takes no tolerance", NotReached)
	case c.Expected == NotReached && c.Measure.Repeated:
		return fail("measure", "a %q claim is not a repeated measurement", NotReached)
	case repeatedOrder && c.Tolerance != nil:
		return fail("tolerance", "an ordering of repeated measurements takes no tolerance (its bootstrap interval is the margin)")
	case repeatedOrder:
	case c.Expected != NotReached && (c.Tolerance == nil || (c.Tolerance.Absolute == nil && c.Tolerance.Relative == nil)):
		return fail("tolerance", "missing tolerance (absolute and/or relative)")
	case c.Tolerance == nil:
	case (c.Tolerance.Absolute != nil && *c.Tolerance.Absolute < 0) || (c.Tolerance.Relative != nil && *c.Tolerance.Relative < 0):
		return fail("tolerance", "negative tolerance")
	}
	switch {
	case c.Output == "":
		return fail("id", "missing output (%q or a CSV file name)", GoTest)
	default:
		if !strings.HasSuffix(c.Output, ".csv") || strings.Contains(c.Output, "..") {
			return fail("output", "output %q: want %q or a .csv file name under the output directory", c.Output, GoTest)
		}
		if c.Measure.Column == "" {
			return fail("measure", "a CSV claim needs measure.column")
		}
		if c.Expected == NotReached {
			break
		}
		if ord, err := parseOrdering(c.Expected); err != nil {
			return fail("expected", "%v", err)
		} else if ord != nil && c.Measure.Group == "" {
			return fail("measure", "an ordering needs measure.group (the column naming %s)", strings.Join(ord, ", "))
		} else if ord == nil {
			if _, err := strconv.ParseFloat(c.Expected, 64); err != nil {
				return fail("expected", "expected %q is neither a number, an ordering such as \"a < b < c\" nor %q",
					c.Expected, NotReached)
			}
		}
	}
	return nil
}

// parseOrdering parses "a < b < c" (nil, nil when s has no "<").
func parseOrdering(s string) ([]string, error) {
	if !strings.Contains(s, "<") {
		return nil, nil
	}
	var out []string
	for _, p := range strings.Split(s, "<") {
		p = strings.TrimSpace(p)
		if p == "" {
			return nil, fmt.Errorf("ordering %q has an empty term", s)
		}
		out = append(out, p)
	}
	return out, nil
}

// Command is a parsed claim command: Args are the arguments after the program name.
type Command struct {
	Program string // "fgn" or "go"
	Args    []string
	// TestPackage and TestRun are set for go test commands.
	TestPackage, TestRun string
}

// ParseCommand splits and checks a claim command: "fgn <subcommand> ..." with a subcommand from
// subcommands, or "go test <package> -run <regexp> -json ..." (the package a relative "./" path).
// Words may be single- or double-quoted.
func ParseCommand(s string, subcommands []string) (*Command, error) {
	words, err := splitWords(s)
	if err != nil {
		return nil, err
	}
	if len(words) < 2 {
		return nil, fmt.Errorf("command %q: want \"fgn <subcommand> ...\" or \"go test <package> -run <regexp> -json\"", s)
	}
	cmd := &Command{Program: words[0], Args: words[1:]}
	switch words[0] {
	case "fgn":
		if !slices.Contains(subcommands, words[1]) {
			return nil, fmt.Errorf("command %q: unknown fgn subcommand %q (known: %s)", s, words[1], strings.Join(subcommands, ", "))
		}
	case "go":
		if words[1] != "test" || len(words) < 3 || !strings.HasPrefix(words[2], "./") {
			return nil, fmt.Errorf("command %q: only \"go test ./<package> -run <regexp> -json\" is allowed", s)
		}
		cmd.TestPackage = words[2]
		jsonOut := false
		for i := 3; i < len(words); i++ {
			switch words[i] {
			case "-json":
				jsonOut = true
			case "-run":
				if i+1 == len(words) {
					return nil, fmt.Errorf("command %q: -run without a pattern", s)
				}
				i++
				cmd.TestRun = words[i]
			}
		}
		if cmd.TestRun == "" || !jsonOut {
			return nil, fmt.Errorf("command %q: a go test claim needs -run <regexp> and -json", s)
		}
		if _, err := regexp.Compile(cmd.TestRun); err != nil {
			return nil, fmt.Errorf("command %q: -run pattern: %w", s, err)
		}
	default:
		return nil, fmt.Errorf("command %q: unknown program %q (want fgn or go test)", s, words[0])
	}
	return cmd, nil
}

// splitWords splits s at spaces, honouring single and double quotes (no escapes).
func splitWords(s string) ([]string, error) {
	var (
		words []string
		cur   strings.Builder
		quote rune
		in    bool
	)
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '\'' || r == '"':
			quote, in = r, true
		case r == ' ' || r == '\t' || r == '\n':
			if in {
				words = append(words, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("command %q: unterminated quote", s)
	}
	if in {
		words = append(words, cur.String())
	}
	return words, nil
}
