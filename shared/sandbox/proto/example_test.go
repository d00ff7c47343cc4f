package proto_test

import (
	"errors"
	"fmt"

	"github.com/cairnrun/cairn/shared/contracts"
	"github.com/cairnrun/cairn/shared/sandbox/proto"
)

func Example() {
	// The server side: a sandbox error becomes a code and a status.
	err := fmt.Errorf("reading notes.txt: no such file or directory: %w", contracts.ErrNotFound)
	code, status := proto.Code(err)
	fmt.Println(code, status)

	// The client side: the code becomes an error matching the sentinel.
	back := proto.Err(code, err.Error())
	fmt.Println(errors.Is(back, contracts.ErrNotFound), back)
	// Output:
	// not_found 404
	// true reading notes.txt: no such file or directory: not found
}
