// Admin's charts (a key over time, budget gauges), from the JSON each page carries.
import { mountCharts } from "../builder/js/charts.js";

mountCharts();
