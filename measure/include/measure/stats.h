// Small statistics shared by the measuring protocol (docs/protocol.md "Measuring"): location and spread of
// finite values, and Student's t distribution for intervals on few paired windows. Pure functions.
#pragma once

#include <vector>

namespace tb::measure {

// Non-finite values are ignored by all of these; NaN when nothing is left.
double median(std::vector<double> values);
double mean(const std::vector<double>& values);
// Sample standard deviation (n - 1); NaN for fewer than two values.
double stddev(const std::vector<double>& values);
// Quantile q in [0, 1] by linear interpolation between order statistics (type 7).
double quantile(std::vector<double> values, double q);

// Student's t distribution with `df` > 0 degrees of freedom (df need not be an integer: Welch).
double student_t_cdf(double t, double df);
// The t with P(T <= t) = p, p in (0, 1).
double student_t_quantile(double p, double df);

// Ordinary least squares y = a + b x: slope, its standard error, and the residual degrees of freedom.
struct LinearFit {
  double intercept = 0, slope = 0, slope_se = 0;
  int df = 0;  // n - 2; the fit is unusable below 1
};
LinearFit fit_line(const std::vector<double>& x, const std::vector<double>& y);

}  // namespace tb::measure
