module github.com/aslrun/aslrun

go 1.26
