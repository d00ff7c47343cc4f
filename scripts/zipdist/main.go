// Command zipdist zips dist/<name>/bootstrap into dist/<name>.zip for each
// name given, with the executable bit Lambda needs (no zip(1) required).
package main

import (
	"archive/zip"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

func main() {
	for _, name := range os.Args[1:] {
		if err := zipOne(name); err != nil {
			fmt.Fprintln(os.Stderr, "zipdist:", err)
			os.Exit(1)
		}
	}
}

func zipOne(name string) error {
	src := filepath.Join("dist", name, "bootstrap")
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(filepath.Join("dist", name+".zip"))
	if err != nil {
		return err
	}
	zw := zip.NewWriter(out)
	hdr := &zip.FileHeader{Name: "bootstrap", Method: zip.Deflate}
	hdr.SetMode(0o755)
	w, err := zw.CreateHeader(hdr)
	if err != nil {
		return err
	}
	if _, err := io.Copy(w, in); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return out.Close()
}
