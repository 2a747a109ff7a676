package livepath

import (
	"fmt"

	"github.com/reflux-dev/reflux/e2e/internal/fixture"
)

// flags renders a ConfigMap of one flag, with a comment, per name.
func flags(names ...string) map[string]string {
	body := ""
	for _, n := range names {
		body += fmt.Sprintf("---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n  # on for everyone since May\n  FEATURE_SEARCH: \"true\"\n", n)
	}
	return fixture.OneFile("configmaps.yaml", body)
}

// configMaps renders n ConfigMaps with four keys each, as one
// multi-document file a base grows into.
func configMaps(n int, value string) string {
	var out []byte
	for i := range n {
		out = fmt.Appendf(out, "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%05d\ndata:\n"+
			"  LOG_LEVEL: info\n  REGION: eu-west-1\n  OWNER: team-%d\n  VALUE: %q\n", i, i%7, fmt.Sprintf("%s-%d", value, i))
	}
	return string(out)
}
