package console_test

import (
	"regexp"
	"strings"
	"testing"

	"golang.org/x/net/html"
)

// A small selector engine over parsed HTML, enough for the console's hooks:
// compound selectors (tag, #id, .class, [attr], [attr=value] or
// [attr="value"]) joined by spaces (descendant).

type compound struct {
	tag, id string
	classes []string
	attrs   [][2]string // name, value ("\x00" = any value)
}

var token = regexp.MustCompile(`^(?:([a-zA-Z][a-zA-Z0-9-]*)|#([\w-]+)|\.([\w-]+)|\[([\w-]+)(?:=(?:"([^"]*)"|([^\]]*)))?\])`)

func parseCompound(t *testing.T, s string) compound {
	t.Helper()
	var c compound
	for s != "" {
		m := token.FindStringSubmatch(s)
		if m == nil {
			t.Fatalf("selector part %q: not understood", s)
		}
		switch {
		case m[1] != "":
			c.tag = strings.ToLower(m[1])
		case m[2] != "":
			c.id = m[2]
		case m[3] != "":
			c.classes = append(c.classes, m[3])
		default:
			v := "\x00"
			if strings.Contains(m[0], "=") {
				v = m[5] + m[6]
			}
			c.attrs = append(c.attrs, [2]string{m[4], v})
		}
		s = s[len(m[0]):]
	}
	return c
}

func (c compound) match(n *html.Node) bool {
	if n.Type != html.ElementNode || c.tag != "" && n.Data != c.tag {
		return false
	}
	if c.id != "" && attr(n, "id") != c.id {
		return false
	}
	for _, cl := range c.classes {
		if !hasClass(n, cl) {
			return false
		}
	}
	for _, a := range c.attrs {
		v, ok := attrOK(n, a[0])
		if !ok || a[1] != "\x00" && v != a[1] {
			return false
		}
	}
	return true
}

// all returns the elements under root that sel matches, in document order.
func all(t *testing.T, root *html.Node, sel string) []*html.Node {
	t.Helper()
	parts := strings.Fields(sel)
	var cs []compound
	for _, p := range parts {
		cs = append(cs, parseCompound(t, p))
	}
	cur := []*html.Node{root}
	for _, c := range cs {
		seen := map[*html.Node]bool{}
		var next []*html.Node
		for _, base := range cur {
			walk(base, func(n *html.Node) {
				if n != base && c.match(n) && !seen[n] {
					seen[n] = true
					next = append(next, n)
				}
			})
		}
		cur = next
	}
	return cur
}

// one returns the single element sel matches, failing the test otherwise.
func one(t *testing.T, root *html.Node, sel string) *html.Node {
	t.Helper()
	got := all(t, root, sel)
	if len(got) != 1 {
		t.Fatalf("%q matches %d elements, want 1", sel, len(got))
	}
	return got[0]
}

func walk(n *html.Node, f func(*html.Node)) {
	f(n)
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		walk(c, f)
	}
}

func attrOK(n *html.Node, key string) (string, bool) {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val, true
		}
	}
	return "", false
}

func attr(n *html.Node, key string) string {
	v, _ := attrOK(n, key)
	return v
}

func hasClass(n *html.Node, cl string) bool {
	for _, f := range strings.Fields(attr(n, "class")) {
		if f == cl {
			return true
		}
	}
	return false
}

// text is the text content of n.
func text(n *html.Node) string {
	var b strings.Builder
	walk(n, func(x *html.Node) {
		if x.Type == html.TextNode {
			b.WriteString(x.Data)
		}
	})
	return strings.Join(strings.Fields(b.String()), " ")
}

// inside reports whether n is a descendant of anc.
func inside(n, anc *html.Node) bool {
	for p := n.Parent; p != nil; p = p.Parent {
		if p == anc {
			return true
		}
	}
	return false
}
