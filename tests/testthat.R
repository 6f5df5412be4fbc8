library(testthat)
library(mirrored)

test_check("mirrored")
