# Which call an error names.

# The call the user wrote: the outermost frame running one of this package's
# exported functions or S3 methods (whose frame shows the method's name,
# turned into the generic's: `fit()`, not `fit.mirrored_model()`), so that an error raised deep
# inside (an internal helper, an R6 method, a function given to lapply())
# names it rather than the helper. NULL when none is on the stack (a user's
# direct `model$set_weights()` call, say).
user_call <- function() {
  ns <- topenv(environment(user_call))
  exports <- getNamespaceExports(ns)
  n <- sys.nframe() - 1L
  for (i in seq_len(max(0L, n))) {
    if (!identical(environment(sys.function(i)), ns)) next
    cl <- sys.call(i)
    if (!is.call(cl)) next
    head <- cl[[1]]
    # mirrored::fit(...)
    if (is.call(head) && length(head) == 3 && as.character(head[[1]]) %in% c("::", ":::")) head <- head[[3]]
    if (!is.symbol(head)) next
    nm <- as.character(head)
    if (nm %in% exports || grepl("\\.(mirrored_[a-z_]+|keras_training_history)$", nm)) {
      return(user_facing_call_head(cl))
    }
  }
  NULL
}
