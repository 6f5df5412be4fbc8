# The callback class: the root R6 class every callback inherits from, the
# `Callback()` class constructor and `callback_lambda()`.
#
# Index base: like keras3, every R callback method receives 1-based indices.
# `epoch` is the absolute epoch number (honouring `initial_epoch`) and `batch`
# the step number within the epoch, both counted from 1. keras3 achieves this
# by wrapping each R method as `fn(idx + 1, logs)`; here the training loop
# passes 1-based numbers directly (see `callback_list()`).

# Names of all methods a callback may define, with the kind of signature.
callback_method_signatures <- c(
  on_epoch_begin = "idx_logs", on_epoch_end = "idx_logs",
  on_train_begin = "logs", on_train_end = "logs",
  on_train_batch_begin = "idx_logs", on_train_batch_end = "idx_logs",
  on_test_begin = "logs", on_test_end = "logs",
  on_test_batch_begin = "idx_logs", on_test_batch_end = "idx_logs",
  on_predict_begin = "logs", on_predict_end = "logs",
  on_predict_batch_begin = "idx_logs", on_predict_batch_end = "idx_logs",
  # keras3 keeps these as aliases of on_train_batch_{begin,end}.
  on_batch_begin = "idx_logs", on_batch_end = "idx_logs"
)

# The root R6 class of every callback. It defines no `on_*` method on purpose:
# `callback_list()` detects which events a callback wants by the presence of
# the method, so the training loop only calls into R for those events.
CallbackBase <- R6::R6Class("Callback",
  public = list(
    # @field model The model being trained, set by the training loop.
    model = NULL,
    # @field params Named list `list(verbose, epochs, steps)`, set by the
    #   training loop.
    params = NULL,
    # Keras' Callback.__init__ takes no arguments; here so that a subclass's
    # initialize() can call super$initialize(), as keras3's guides do.
    initialize = function() invisible(self)
  )
)

# ---- Callback() ---------------------------------------------------------------

#' Define a custom `Callback` class
#'
#' Creates a callback class whose instances can be passed to `fit()`,
#' `evaluate()` and `predict()` through their `callbacks` argument. Override
#' the methods for the stages you need; every method is optional.
#'
#' As in keras3, `initialize()` may call `super$initialize()`, methods may
#' add fields (`self$wait <- 0`), and a trailing comma after the last
#' argument is allowed.
#'
#' Methods are R6 methods: inside them `self` is the callback instance (with
#' fields `self$model`, the model being trained, and `self$params`, the named
#' list `list(verbose, epochs, steps)`), `private` its private environment and
#' `super` the parent class. `self$model$stop_training <- TRUE` stops `fit()`:
#' set in a training batch method, after that batch (the epoch then ends as
#' usual, as in Keras); set in an epoch method, after that epoch.
#'
#' Like keras3, `epoch` and `batch` are **1-based**: the first epoch is `1`
#' (the absolute epoch number, so with `initial_epoch = 3` the first call gets
#' `3`) and the first batch of every epoch is `1`. A method that returns a
#' named list has that list merged into `logs`, which the callbacks after it
#' (and the training history) then see.
#'
#' @param classname String, the name of the class (conventionally CamelCase).
#' @param on_epoch_begin,on_epoch_end `function(epoch, logs = NULL)`, called
#'   at the start and at the end of every training epoch. At the end `logs`
#'   holds the epoch's metrics, validation metrics prefixed by `val_`.
#' @param on_train_begin,on_train_end `function(logs = NULL)`, called at the
#'   start and at the end of `fit()`.
#' @param on_train_batch_begin,on_train_batch_end `function(batch, logs =
#'   NULL)`, called around every training batch (at the end `logs` holds the
#'   running metrics of the epoch).
#' @param on_test_begin,on_test_end `function(logs = NULL)`, called around
#'   `evaluate()` and validation.
#' @param on_test_batch_begin,on_test_batch_end `function(batch, logs =
#'   NULL)`, called around every evaluation batch.
#' @param on_predict_begin,on_predict_end `function(logs = NULL)`, called
#'   around `predict()`.
#' @param on_predict_batch_begin,on_predict_batch_end `function(batch, logs =
#'   NULL)`, called around every prediction batch.
#' @param ... Further named public members (methods or fields), e.g.
#'   `initialize`.
#' @param public,private Named lists of additional public and private members.
#' @param inherit A class created by `Callback()` to inherit from (default:
#'   the base callback class).
#' @param parent_env Environment the methods are evaluated in.
#'
#' @returns A class generator: call it (with the arguments of `initialize`,
#'   if any) to create a callback instance. `generator$new(...)` works too.
#' @seealso [callback_lambda()]
#' @export
#' @family callbacks
#' @seealso [fit.mirrored_model()]
#' @examples
#' EpochCounter <- Callback("EpochCounter",
#'   on_train_begin = function(logs = NULL) self$epochs_seen <- 0,
#'   on_epoch_end = function(epoch, logs = NULL) {
#'     self$epochs_seen <- self$epochs_seen + 1
#'     list(epoch_number = epoch)
#'   },
#'   public = list(epochs_seen = 0)
#' )
#' counter <- EpochCounter()
#' counter$on_train_begin()
#' counter$on_epoch_end(1, list(loss = 0.5))
#' counter$epochs_seen
Callback <- function(classname,
                     on_epoch_begin = NULL,
                     on_epoch_end = NULL,
                     on_train_begin = NULL,
                     on_train_end = NULL,
                     on_train_batch_begin = NULL,
                     on_train_batch_end = NULL,
                     on_test_begin = NULL,
                     on_test_end = NULL,
                     on_test_batch_begin = NULL,
                     on_test_batch_end = NULL,
                     on_predict_begin = NULL,
                     on_predict_end = NULL,
                     on_predict_batch_begin = NULL,
                     on_predict_batch_end = NULL,
                     ...,
                     public = list(),
                     private = list(),
                     inherit = NULL,
                     parent_env = parent.frame()) {
  check_string_arg(classname, "classname")
  methods <- list(
    on_epoch_begin = on_epoch_begin, on_epoch_end = on_epoch_end,
    on_train_begin = on_train_begin, on_train_end = on_train_end,
    on_train_batch_begin = on_train_batch_begin,
    on_train_batch_end = on_train_batch_end,
    on_test_begin = on_test_begin, on_test_end = on_test_end,
    on_test_batch_begin = on_test_batch_begin,
    on_test_batch_end = on_test_batch_end,
    on_predict_begin = on_predict_begin, on_predict_end = on_predict_end,
    on_predict_batch_begin = on_predict_batch_begin,
    on_predict_batch_end = on_predict_batch_end
  )
  methods <- methods[!vapply(methods, is.null, logical(1))]
  check_callback_fns(methods)

  dots <- dots_without_empty(...)
  if (length(dots) && (is.null(names(dots)) || any(!nzchar(names(dots))))) {
    cli::cli_abort("All members passed in {.arg ...} must be named.",
      class = c("mirrored_value_error", "mirrored_error")
    )
  }
  if (!is.list(public)) abort_arg("public", "a named list", public)
  if (!is.list(private)) abort_arg("private", "a named list", private)
  if (!is.environment(parent_env)) abort_arg("parent_env", "an environment", parent_env)
  members <- utils::modifyList(methods, dots, keep.null = FALSE)
  members <- utils::modifyList(members, public, keep.null = TRUE)
  on_names <- intersect(names(members), names(callback_method_signatures))
  check_callback_fns(members[on_names])

  parent_class <- resolve_callback_parent(inherit)
  parts <- split_active_members(members)
  generator <- do.call(R6::R6Class, list(
    classname = classname,
    public = parts$public,
    active = if (length(parts$active)) parts$active,
    private = if (length(private)) private else NULL,
    inherit = parent_class,
    parent_env = parent_env,
    # Methods may add fields (self$wait <- 0 in on_train_begin), as Python's do.
    lock_objects = FALSE
  ))
  new_callback_generator(generator)
}

#' @rdname Callback
#' @export
new_callback_class <- Callback

resolve_callback_parent <- function(inherit, call = parent.frame()) {
  if (is.null(inherit)) return(CallbackBase)
  if (inherits(inherit, "mirrored_callback_generator")) {
    inherit <- attr(inherit, "generator")
  }
  gen <- inherit
  while (inherits(gen, "R6ClassGenerator")) {
    if (identical(gen, CallbackBase)) return(inherit)
    gen <- gen$get_inherit()
  }
  abort_arg("inherit", "a class created by `Callback()`", inherit, call)
}

# Wraps an R6 generator in a function (calling it makes an instance, like
# keras3) that still answers `$new()` and friends through `$`.
new_callback_generator <- function(generator) {
  f <- function(...) generator$new(...)
  structure(f, generator = generator,
            class = c("mirrored_callback_generator", "function"))
}

#' @export
`$.mirrored_callback_generator` <- function(x, name) {
  attr(x, "generator", exact = TRUE)[[name]]
}

#' @export
print.mirrored_callback_generator <- function(x, ...) {
  cat("<Callback class: ", attr(x, "generator")$classname, ">\n", sep = "")
  invisible(x)
}

is_callback <- function(x) inherits(x, "Callback") && is.environment(x)

# ---- callback_lambda() --------------------------------------------------------

#' Callback for creating simple, custom callbacks on-the-fly
#'
#' Builds a callback from plain functions. `on_epoch_begin`/`on_epoch_end`
#' take `(epoch, logs)`, `on_train_begin`/`on_train_end` take `(logs)`, the
#' batch methods take `(batch, logs)`. As in keras3 the `epoch` and `batch`
#' numbers are **1-based**. A function that returns a named list has that
#' list merged into `logs` (so it is seen by later callbacks and recorded in
#' the training history).
#'
#' The functions keep their own environment (unlike methods given to
#' [Callback()], they are not R6 methods and have no `self`).
#'
#' @param on_epoch_begin,on_epoch_end Called at the start/end of every epoch.
#' @param on_train_begin,on_train_end Called at the start/end of training.
#' @param on_train_batch_begin,on_train_batch_end Called around every
#'   training batch.
#' @param ... Any other callback method by name, e.g. `on_test_end =
#'   function(logs) ...` (see [Callback()] for the list).
#' @returns A callback instance to pass in `callbacks = list(...)`.
#' @export
#' @family callbacks
#' @seealso [fit.mirrored_model()]
#' @examples
#' seen <- integer()
#' cb <- callback_lambda(on_epoch_end = function(epoch, logs) {
#'   seen <<- c(seen, epoch)
#'   list(double_loss = 2 * logs$loss)
#' })
#' cb$on_epoch_end(1, list(loss = 0.25))
#' seen
callback_lambda <- function(on_epoch_begin = NULL,
                            on_epoch_end = NULL,
                            on_train_begin = NULL,
                            on_train_end = NULL,
                            on_train_batch_begin = NULL,
                            on_train_batch_end = NULL,
                            ...) {
  fns <- c(
    list(
      on_epoch_begin = on_epoch_begin, on_epoch_end = on_epoch_end,
      on_train_begin = on_train_begin, on_train_end = on_train_end,
      on_train_batch_begin = on_train_batch_begin,
      on_train_batch_end = on_train_batch_end
    ),
    list(...)
  )
  if (...length() && (is.null(names(list(...))) || any(!nzchar(names(list(...)))))) {
    cli::cli_abort("All callback methods passed in {.arg ...} must be named.",
      class = c("mirrored_value_error", "mirrored_error")
    )
  }
  fns <- fns[!vapply(fns, is.null, logical(1))]
  check_callback_fns(fns)
  # R6 rebinds the environment of methods, so the user's functions are kept
  # in a private field and called from generated forwarding methods.
  methods <- lapply(names(fns), lambda_forwarder)
  names(methods) <- names(fns)
  generator <- R6::R6Class("LambdaCallback",
    inherit = CallbackBase,
    public = methods,
    private = list(fns = fns)
  )
  generator$new()
}

lambda_forwarder <- function(name) {
  if (callback_method_signatures[[name]] == "idx_logs") {
    eval(substitute(
      function(idx, logs = NULL) private$fns[[NAME]](idx, logs),
      list(NAME = name)
    ), baseenv())
  } else {
    eval(substitute(
      function(logs = NULL) private$fns[[NAME]](logs),
      list(NAME = name)
    ), baseenv())
  }
}
