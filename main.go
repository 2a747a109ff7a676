// Command reflux is a Flux extension that reverse-syncs live drift to Git.
//
// `reflux manager` runs the controllers; `reflux trace` maps a rendered
// field back to the source line that declared it.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/reflux-dev/reflux/cmd/cli"
)

func main() {
	root := &cobra.Command{
		Use:           "reflux",
		Short:         "Reverse-sync live drift from Flux Kustomizations back to Git",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(cli.NewManagerCommand(), cli.NewTraceCommand(), cli.NewDiffCommand())
	if err := root.ExecuteContext(ctrl.SetupSignalHandler()); err != nil {
		fmt.Fprintln(os.Stderr, "reflux:", err)
		os.Exit(1)
	}
}
