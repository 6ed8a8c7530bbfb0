package targets_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"lockstep/targets"
)

func ExampleLocal_Run() {
	local := targets.NewLocal()
	res, err := local.Run(context.Background(), targets.Command{
		Line: `echo "hello $WHO"; exit 3`,
		Env:  map[string]string{"WHO": "world"},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%q exit %d\n", res.Stdout, res.ExitCode)
	// Output: "hello world\n" exit 3
}

// A launch: move the old log aside, start, watch, stop.
func ExampleLocal_Start() {
	ctx := context.Background()
	local := targets.NewLocal()
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	log := filepath.Join(dir, "server.log")

	if _, err := local.MoveAside(ctx, log); err != nil {
		fmt.Println(err)
		return
	}
	p, err := local.Start(ctx, targets.Command{Line: "echo ready; exec sleep 60"}, log)
	if err != nil {
		fmt.Println(err)
		return
	}
	st, _ := local.Inspect(ctx, p)
	fmt.Println("alive:", st.Alive)

	if err := local.Stop(ctx, p, 5*time.Second); err != nil {
		fmt.Println(err)
		return
	}
	st, _ = local.Inspect(ctx, p)
	fmt.Println("exited:", st.Exited, st.Signal)
	// Output:
	// alive: true
	// exited: true SIGTERM
}
