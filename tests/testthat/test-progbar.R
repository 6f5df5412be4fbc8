# Console formats: progress lines (Keras 3 progbar) and the summary table.
# Time is injected through a fake clock, so every line is exact.

# Exact bytes written to stdout by `expr` (keeps \r, \b and final newlines).
stdout_of <- function(expr) {
  path <- tempfile()
  con <- file(path, open = "wb")
  sink(con)
  tryCatch(force(expr), finally = {
    sink()
    close(con)
  })
  out <- rawToChar(readBin(path, "raw", max(file.size(path), 1L)))
  Encoding(out) <- "UTF-8"
  out
}

# A clock that returns the given times in turn (the last one repeats).
fake_clock <- function(times) {
  i <- 0L
  function() {
    i <<- min(i + 1L, length(times))
    times[[i]]
  }
}

bar <- function(n) strrep("\u2501", n)

test_that("per-step time picks s, ms or us like Keras' _format_time", {
  expect_equal(progbar_format_time(0), " 0s/step")
  expect_equal(progbar_format_time(2.4), " 2s/step")
  expect_equal(progbar_format_time(1), " 1s/step")
  expect_equal(progbar_format_time(0.0061), " 6ms/step")
  expect_equal(progbar_format_time(0.001), " 1ms/step")
  expect_equal(progbar_format_time(0.00045), " 450us/step")
})

test_that("metric values use %.4f above 1e-3 and %.4e otherwise", {
  expect_equal(progbar_format_value(0.26161), "0.2616")
  expect_equal(progbar_format_value(1234.56789), "1234.5679")
  expect_equal(progbar_format_value(5e-05), "5.0000e-05")
  expect_equal(progbar_format_value(0), "0.0000e+00")
  # verbose 2 compares v, verbose 1 compares abs(v)
  expect_equal(progbar_format_value(-0.5, verbose = 2), "-5.0000e-01")
  expect_equal(progbar_format_value(-0.5, verbose = 1), "-0.5000")
  expect_equal(progbar_format_value(NaN), "nan")
  expect_equal(progbar_format_value(Inf), "inf")
})

test_that("ETA switches between s, m:ss and h:mm:ss", {
  expect_equal(progbar_format_eta(59.7), "59s")
  expect_equal(progbar_format_eta(61), "1:01")
  expect_equal(progbar_format_eta(3725.5), "1:02:05")
})

test_that("verbose = 2 prints the header and one line per epoch", {
  logger <- callback_progbar_logger(now = fake_clock(c(100, 104.4)))
  cbl <- callback_list(list(logger), NULL, list(verbose = 2, epochs = 2, steps = 782))
  out <- stdout_of({
    cbl$on_train_begin()
    cbl$on_epoch_begin(1)
    cbl$update(1, list(loss = 1)) # ignored at verbose 2
    cbl$on_epoch_end(1, list(
      loss = 0.26161, sparse_categorical_accuracy = 0.92321,
      val_loss = 0.15099, val_sparse_categorical_accuracy = 0.95243
    ))
  })
  expect_equal(out, paste0(
    "Epoch 1/2\n",
    "782/782 - 4s - 6ms/step - loss: 0.2616 - sparse_categorical_accuracy: 0.9232",
    " - val_loss: 0.1510 - val_sparse_categorical_accuracy: 0.9524\n"
  ))
})

test_that("the epoch header needs verbose != 0 and more than one epoch", {
  run <- function(verbose, epochs) {
    logger <- callback_progbar_logger(now = fake_clock(c(0, 1)), dynamic = FALSE,
                                      colour = FALSE)
    cbl <- callback_list(logger, NULL, list(verbose = verbose, epochs = epochs, steps = 5))
    stdout_of({
      cbl$on_train_begin()
      cbl$on_epoch_begin(3)
      cbl$on_epoch_end(3, list(loss = 0.5))
    })
  }
  expect_equal(run(2, 1), "5/5 - 1s - 200ms/step - loss: 0.5000\n")
  expect_match(run(2, 4), "^Epoch 3/4\n5/5 - 1s")
  expect_equal(run(0, 4), "")
  expect_match(run("auto", 4), "^Epoch 3/4\n")
})

test_that("verbose = 1 without a dynamic console prints only the final line", {
  skip_if_not(isTRUE(l10n_info()[["UTF-8"]]))
  logger <- callback_progbar_logger(now = fake_clock(c(100, 100.5, 102, 104.4)),
                                    dynamic = FALSE, colour = FALSE)
  cbl <- callback_list(logger, NULL, list(verbose = 1, epochs = 1, steps = 782))
  out <- stdout_of({
    cbl$on_train_begin()
    cbl$on_epoch_begin(1)
    cbl$update(1, list(loss = 0.9))
    cbl$update(400, list(loss = 0.4))
    cbl$on_epoch_end(1, list(loss = 0.26161, val_loss = 0.15099))
  })
  # time/step excludes step 1: (104.4 - 100.5) / 781 = 4.99 ms
  expect_equal(out, paste0("782/782 ", bar(20),
                           " 4s 5ms/step - loss: 0.2616 - val_loss: 0.1510\n"))
})

test_that("verbose = 1 redraws in place with colours, ETA and running means", {
  skip_if_not(isTRUE(l10n_info()[["UTF-8"]]))
  pb <- new_progbar(782, verbose = 1, now = fake_clock(c(100, 100.5, 100.52, 102.5, 104.4)),
                    dynamic = TRUE, colour = TRUE)
  first <- progbar_update(pb, 1, list(loss = 0.5))
  expect_equal(first, paste0(
    "\r\033[1m  1/782\033[0m \033[37m", bar(20), "\033[0m",
    " \033[1m6:30\033[0m 500ms/step - loss: 0.5000"
  ))
  width1 <- nchar(paste0("  1/782 ", bar(20), " 6:30 500ms/step - loss: 0.5000"))
  # within 0.05 s of the last redraw: nothing
  expect_equal(progbar_update(pb, 200, list(loss = 0.3)), "")
  # running value = step-weighted mean of the reported values (Keras)
  second <- progbar_update(pb, 391, list(loss = 0.3))
  mean_loss <- (0.5 * 1 + 0.3 * 199 + 0.3 * 191) / 391
  tpu <- (102.5 - 100.5) / 390
  expect_equal(second, paste0(
    strrep("\b", width1), "\r\033[1m391/782\033[0m \033[32m", bar(10), "\033[0m",
    "\033[37m", bar(10), "\033[0m \033[1m", progbar_format_eta(tpu * 391), "\033[0m",
    progbar_format_time(tpu), " - loss: ", sprintf("%.4f", mean_loss),
    strrep(" ", 4) # wipes the rest of the longer first line
  ))
  final <- progbar_update(pb, 782, list(loss = 0.25), finalize = TRUE)
  expect_match(final, "\033\\[1m4s\033\\[0m 5ms/step - loss: 0.2500\n$")
})

test_that("a shorter redraw is padded with spaces to wipe the previous one", {
  skip_if_not(isTRUE(l10n_info()[["UTF-8"]]))
  pb <- new_progbar(10, verbose = 1, now = fake_clock(c(0, 1, 2, 3)),
                    dynamic = TRUE, colour = FALSE)
  a <- progbar_update(pb, 1, list(loss = 123.456))
  b <- progbar_update(pb, 2, list(loss = -121.456)) # running mean 1.0
  wa <- nchar(sub("^\r", "", a))
  expect_equal(nchar(b), wa + 1L + wa) # \b * wa, \r, line padded to wa
  expect_match(b, "loss: 1.0000  $")
})

test_that("an unknown number of steps shows a counter, then the final count", {
  pb <- new_progbar(NULL, verbose = 1, now = fake_clock(c(0, 1, 2)),
                    dynamic = TRUE, colour = FALSE)
  expect_equal(progbar_update(pb, 5, list(loss = 0.5)),
               "\r      5/Unknown 1s 200ms/step - loss: 0.5000")
  logger <- callback_progbar_logger(now = fake_clock(c(0, 3)), dynamic = FALSE,
                                    colour = FALSE)
  cbl <- callback_list(logger, NULL, list(verbose = 2, epochs = 1, steps = NULL))
  out <- stdout_of({
    cbl$on_train_begin()
    cbl$on_epoch_begin(1)
    logger$update(6)
    cbl$on_epoch_end(1, list(loss = 0.5))
  })
  expect_equal(out, "6/6 - 3s - 500ms/step - loss: 0.5000\n")
})

test_that("evaluate() and predict() lines", {
  expect_equal(
    progbar_line_evaluate(157, 0.47, list(loss = 0.10227, sparse_categorical_accuracy = 0.9685)),
    "157/157 - 0s - 3ms/step - loss: 0.1023 - sparse_categorical_accuracy: 0.9685"
  )
  expect_equal(progbar_line_evaluate(1, 0.16), "1/1 - 0s - 160ms/step")
  expect_equal(progbar_line_evaluate(20, 30, list(loss = 2)),
               "20/20 - 30s - 2s/step - loss: 2.0000")
  # the logger prints the same line at the end of evaluate(), not inside fit()
  logger <- callback_progbar_logger(now = fake_clock(c(0, 0.47)))
  cbl <- callback_list(logger, NULL, list(verbose = 2, epochs = 1, steps = 157))
  out <- stdout_of({
    cbl$on_test_begin()
    cbl$on_test_end(list(loss = 0.10227))
  })
  expect_equal(out, "157/157 - 0s - 3ms/step - loss: 0.1023\n")
  logger <- callback_progbar_logger(now = fake_clock(c(0, 1)))
  cbl <- callback_list(logger, NULL, list(verbose = 2, epochs = 2, steps = 5))
  out <- stdout_of({
    cbl$on_train_begin()
    cbl$on_test_begin()
    cbl$on_test_end(list(loss = 1))
  })
  expect_equal(out, "")
})

test_that("the progbar logger never asks for per-batch R calls", {
  logger <- callback_progbar_logger()
  cbl <- callback_list(logger, NULL, list(verbose = 1, epochs = 1, steps = 3))
  expect_false(cbl$wants_batch_events("train"))
  expect_true(cbl$wants_progress_updates())
  cbl2 <- callback_list(callback_progbar_logger(), NULL, list(verbose = 2, epochs = 1, steps = 3))
  expect_false(cbl2$wants_progress_updates())
})

# ---- summary table -----------------------------------------------------------

mlp_rows <- function() {
  data.frame(
    name = c("dense", "dense_1", "dense_2"), class_name = "Dense",
    output_shape = c("(None, 256)", "(None, 256)", "(None, 10)"),
    params = c(200960L, 65792L, 2570L)
  )
}

test_that("summary table of a 784-256-256-10 model matches Keras at 88 columns", {
  skip_if_not(isTRUE(l10n_info()[["UTF-8"]]))
  lines <- format_summary_table("sequential", mlp_rows(), 269322, 269322, 0,
                                line_length = 88)
  expect_equal(lines, c(
    'Model: "sequential"',
    paste0("\u250f", strrep("\u2501", 38), "\u2533", strrep("\u2501", 29), "\u2533", strrep("\u2501", 17), "\u2513"),
    "\u2503 Layer (type)                         \u2503 Output Shape                \u2503         Param # \u2503",
    paste0("\u2521", strrep("\u2501", 38), "\u2547", strrep("\u2501", 29), "\u2547", strrep("\u2501", 17), "\u2529"),
    "\u2502 dense (Dense)                        \u2502 (None, 256)                 \u2502         200,960 \u2502",
    paste0("\u251c", strrep("\u2500", 38), "\u253c", strrep("\u2500", 29), "\u253c", strrep("\u2500", 17), "\u2524"),
    "\u2502 dense_1 (Dense)                      \u2502 (None, 256)                 \u2502          65,792 \u2502",
    paste0("\u251c", strrep("\u2500", 38), "\u253c", strrep("\u2500", 29), "\u253c", strrep("\u2500", 17), "\u2524"),
    "\u2502 dense_2 (Dense)                      \u2502 (None, 10)                  \u2502           2,570 \u2502",
    paste0("\u2514", strrep("\u2500", 38), "\u2534", strrep("\u2500", 29), "\u2534", strrep("\u2500", 17), "\u2518"),
    " Total params: 269,322 (1.03 MB)",
    " Trainable params: 269,322 (1.03 MB)",
    " Non-trainable params: 0 (0.00 B)"
  ))
  expect_true(all(nchar(lines[2:10]) == 88L))
})

test_that("summary table defaults to 76 columns off a terminal, like Keras", {
  skip_if_not(isTRUE(l10n_info()[["UTF-8"]]))
  old <- Sys.getenv("COLUMNS", unset = NA)
  Sys.setenv(COLUMNS = "80")
  on.exit(if (is.na(old)) Sys.unsetenv("COLUMNS") else Sys.setenv(COLUMNS = old))
  lines <- format_summary_table("sequential_8", mlp_rows(), 269322, 269322, 0,
                                optimizer_params = 538646)
  expect_equal(lines[[3]], paste0("\u2503 Layer (type)                    \u2503 Output Shape",
                                  "           \u2503       Param # \u2503"))
  expect_equal(lines[[5]], paste0("\u2502 dense (Dense)                   \u2502 (None, 256)",
                                  "            \u2502       200,960 \u2502"))
  expect_true(all(nchar(lines[2:10]) == 76L))
  expect_equal(lines[[14]], " Optimizer params: 538,646 (2.05 MB)")
})

test_that("a 'Connected to' column appears for non-sequential graphs and long text wraps", {
  skip_if_not(isTRUE(l10n_info()[["UTF-8"]]))
  rows <- data.frame(
    name = c("input_layer", "add"), class_name = c("InputLayer", "Add"),
    output_shape = c("(None, 784)", "(None, 256)"), params = c(0L, NA),
    connected_to = c(NA, "dense[0][0], dense_1[0][0], a_very_long_layer_name_that_goes_on_and_on[0][0]")
  )
  lines <- format_summary_table("functional", rows, 0, 0, 0, line_length = 108)
  expect_equal(lines[[3]], paste0(
    "\u2503 Layer (type)                  \u2503 Output Shape              ",
    "\u2503         Param # \u2503 Connected to               \u2503"))
  expect_equal(lines[[5]], paste0(
    "\u2502 input_layer (InputLayer)      \u2502 (None, 784)               ",
    "\u2502               0 \u2502 -                          \u2502"))
  expect_equal(lines[7:9], c(
    paste0("\u2502 add (Add)                     \u2502 (None, 256)               ",
           "\u2502     0 (unbuilt) \u2502 dense[0][0],               \u2502"),
    paste0("\u2502                               \u2502                           ",
           "\u2502                 \u2502 dense_1[0][0],             \u2502"),
    paste0("\u2502                               \u2502                           ",
           "\u2502                 \u2502 a_very_long_layer_name_th\u2026 \u2502")
  ))
  expect_true(all(nchar(lines[2:10]) == 108L))
})

test_that("column widths and memory sizes follow Keras/rich", {
  expect_equal(summary_column_widths(88, c(0.45, 0.8, 1)), c(38L, 29L, 17L))
  expect_equal(summary_column_widths(76, c(0.45, 0.8, 1)), c(33L, 24L, 15L))
  expect_equal(summary_column_widths(108, c(0.3, 0.56, 0.74, 1)), c(31L, 27L, 17L, 28L))
  expect_equal(readable_memory_size(0), "0.00 B")
  expect_equal(readable_memory_size(1023), "1023.00 B")
  expect_equal(readable_memory_size(4 * 2570), "10.04 KB")
  expect_equal(readable_memory_size(4 * 269322), "1.03 MB")
  expect_equal(readable_memory_size(3 * 1024^3), "3.00 GB")
})

test_that("summary table arguments are checked", {
  expect_error(format_summary_table(1, mlp_rows(), 1, 1, 0), class = "mirrored_value_error")
  expect_error(format_summary_table("m", list(), 1, 1, 0), class = "mirrored_value_error")
  expect_error(format_summary_table("m", mlp_rows()[, -1], 1, 1, 0),
               class = "mirrored_value_error")
})
