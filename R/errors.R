# Classed conditions. Every error mirrored raises inherits from
# `mirrored_error`; the subclass says what went wrong:
# mirrored_value_error (an argument's value), mirrored_shape_error,
# mirrored_io_error, mirrored_device_error, mirrored_interrupted_error,
# mirrored_timeout_error, mirrored_worker_error (another worker of a
# multi-worker job died, hung or disagrees), mirrored_internal_error. A feature Keras has and
# mirrored does not implement yet is a mirrored_not_yet_error (also a
# mirrored_value_error, so callers that catch value errors still do). A
# program or package a function needs and the machine lacks (Graphviz for
# plot() of a model, R/plot-model.R) is a mirrored_dependency_error.

abort_kind <- function(kind, message, ..., call = rlang_caller(), .envir = parent.frame()) {
  call <- call  # forced here, in this frame: see rlang_caller()
  call <- user_facing_call(call)
  cli::cli_abort(message, ..., class = c(paste0("mirrored_", kind, "_error"), "mirrored_error"),
                 call = call, .envir = .envir)
}

abort_value <- function(message, ..., call = rlang_caller(), .envir = parent.frame()) {
  call <- call  # forced here, in this frame: see rlang_caller()
  abort_kind("value", message, ..., call = call, .envir = .envir)
}

abort_not_yet <- function(message, ..., call = rlang_caller(), .envir = parent.frame()) {
  call <- call  # forced here, in this frame: see rlang_caller()
  call <- user_facing_call(call)
  cli::cli_abort(message, ..., class = c("mirrored_not_yet_error", "mirrored_value_error", "mirrored_error"),
                 call = call, .envir = .envir)
}

# Layer arguments keras3 has and mirrored implements later (regularizers,
# constraints, ...): accepted by name, anything but NULL is a not-yet error.
# `args`: a named list of the arguments' values.
check_not_yet_null <- function(args, call = sys.call(-1)) {
  for (nm in names(args)) {
    if (!is.null(args[[nm]])) {
      abort_not_yet("{.arg {nm}} is not supported yet (it comes with training parity); use NULL, not {describe(args[[nm]])}.",
                    call = call)
    }
  }
  invisible()
}

# The function that called the function that raises: the user-facing call.
# It counts frames from where it is evaluated, so the abort_*() functions
# force their `call` argument first thing, by evaluating it in their own
# frame (a promise forced later, inside cli or inside a function such as
# force(), would name an internal: maybe_missing(), vapply()).
rlang_caller <- function() sys.call(-2)

# The call an error shows: a function the user can call. An S3 method's
# frame shows the method's name (`compile.mirrored_model()`): it becomes the
# generic the user called (`compile()`). Any other call that is not one of
# the package's exports (an internal helper, a base function such as
# lapply(), an R6 method `object$set_weights()`) is replaced by the user's
# call found on the stack (user_call()). NULL stays NULL.
user_facing_call <- function(call) {
  if (is.null(call)) return(NULL)
  if (is.call(call) && is.symbol(call[[1]])) {
    fn <- as.character(call[[1]])
    generic <- sub("\\.(mirrored_[a-z_]+|keras_training_history)$", "", fn)
    if (!identical(generic, fn)) {
      call[[1]] <- as.symbol(generic)
      return(call)
    }
    if (fn %in% getNamespaceExports(topenv(environment(user_facing_call)))) return(call)
  }
  user_call() %||% call
}

user_facing_call_head <- function(call) {
  if (is.call(call) && is.symbol(call[[1]])) {
    call[[1]] <- as.symbol(sub("\\.(mirrored_[a-z_]+|keras_training_history)$", "", as.character(call[[1]])))
  }
  call
}

# Runs a call into the C++ core; an error from the core (message prefixed
# "[mirrored:<kind>] " by src/r_glue.h) is re-raised as a classed condition.
# This is the one translation point between core errors and R conditions.
with_core <- function(expr, call = sys.call(-1)) {
  call <- user_facing_call(call)
  tryCatch(expr, error = function(e) {
    msg <- conditionMessage(e)
    m <- regmatches(msg, regexec("^\\[mirrored:([a-z]+)\\] (.*)$", msg))[[1]]
    if (length(m) == 3) {
      cli::cli_abort("{m[3]}", class = c(paste0("mirrored_", m[2], "_error"), "mirrored_error"),
                     call = call)
    }
    stop(e)
  })
}

describe <- function(x) {
  if (is.null(x)) return("NULL")
  if (inherits(x, "mirrored_layer")) return(paste0("a layer (", x$class_name, " ", x$name, ")"))
  if (inherits(x, "mirrored_model")) return(paste0("a model (", x$name, ")"))
  if (is.function(x)) return("a function")
  if (is.character(x) && length(x) == 1) return(paste0("the string \"", x, "\""))
  if (is.atomic(x) && !is.null(dim(x))) {
    return(paste0("a ", typeof(x), " array of dimensions ", paste(dim(x), collapse = " x ")))
  }
  if (is.atomic(x) && length(x) == 1) return(paste0(class(x)[1], " ", format(x)))
  if (is.atomic(x)) return(paste0("a ", class(x)[1], " vector of length ", length(x)))
  paste0("an object of class <", class(x)[1], ">")
}
