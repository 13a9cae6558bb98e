"""The works the methods text cites, as BibTeX: one entry per key of :class:`~initmem.reports.methods.Sentence`.

Why here: the methods sentences (reports/methods.py) name their citation keys, and ``initmem
export`` writes references.bib from this table, so a key cannot be cited without an entry
(tests/test_export.py checks every ``\\cite`` of methods.tex against the file). Entries hold only
what the publications state; the paper this tool implements is cited by its arXiv number and title.
"""

from __future__ import annotations

REFERENCES: dict[str, str] = {
    "forgetinit2026": """@misc{forgetinit2026,
  title         = {Do Deep Networks Forget Initialization? {A} Forgetting-Time View of Practical Inductive Bias},
  year          = {2026},
  eprint        = {2605.29152},
  archivePrefix = {arXiv},
  url           = {https://arxiv.org/abs/2605.29152}
}""",
    "abril2023pymc": """@article{abril2023pymc,
  author  = {Abril-Pla, Oriol and Andreani, Virgile and Carroll, Colin and Dong, Larry and Fonnesbeck, Christopher J.
             and Kochurov, Maxim and Kumar, Ravin and Lao, Junpeng and Luhmann, Christian C. and Martin, Osvaldo A.
             and Osthege, Michael and Vieira, Ricardo and Wiecki, Thomas and Zinkov, Robert},
  title   = {{PyMC}: a modern, and comprehensive probabilistic programming framework in {Python}},
  journal = {PeerJ Computer Science},
  volume  = {9},
  pages   = {e1516},
  year    = {2023},
  doi     = {10.7717/peerj-cs.1516}
}""",
    "seyboldt2024nutpie": """@misc{seyboldt2024nutpie,
  author       = {Seyboldt, Adrian and {PyMC Developers}},
  title        = {nutpie: a fast sampler for Bayesian posteriors},
  howpublished = {\\url{https://github.com/pymc-devs/nutpie}},
  note         = {Software; the version used is given in the methods text}
}""",
    "kumar2019arviz": """@article{kumar2019arviz,
  author  = {Kumar, Ravin and Carroll, Colin and Hartikainen, Ari and Martin, Osvaldo},
  title   = {{ArviZ} a unified library for exploratory analysis of {Bayesian} models in {Python}},
  journal = {Journal of Open Source Software},
  volume  = {4},
  number  = {33},
  pages   = {1143},
  year    = {2019},
  doi     = {10.21105/joss.01143}
}""",
    "hoffman2014nuts": """@article{hoffman2014nuts,
  author  = {Hoffman, Matthew D. and Gelman, Andrew},
  title   = {The {No-U-Turn} Sampler: Adaptively Setting Path Lengths in {Hamiltonian Monte Carlo}},
  journal = {Journal of Machine Learning Research},
  volume  = {15},
  number  = {47},
  pages   = {1593--1623},
  year    = {2014}
}""",
    "vehtari2021rhat": """@article{vehtari2021rhat,
  author  = {Vehtari, Aki and Gelman, Andrew and Simpson, Daniel and Carpenter, Bob and B{\\"u}rkner, Paul-Christian},
  title   = {Rank-Normalization, Folding, and Localization: An Improved {$\\widehat{R}$} for Assessing Convergence
             of {MCMC}},
  journal = {Bayesian Analysis},
  volume  = {16},
  number  = {2},
  pages   = {667--718},
  year    = {2021},
  doi     = {10.1214/20-BA1221}
}""",
    "jordan2024variance": """@inproceedings{jordan2024variance,
  author    = {Jordan, Keller},
  title     = {On the Variance of Neural Network Training with respect to Test Sets and Distributions},
  booktitle = {International Conference on Learning Representations (ICLR)},
  year      = {2024},
  eprint    = {2304.01910},
  archivePrefix = {arXiv}
}""",
    "greenhouse1959": """@article{greenhouse1959,
  author  = {Greenhouse, Samuel W. and Geisser, Seymour},
  title   = {On methods in the analysis of profile data},
  journal = {Psychometrika},
  volume  = {24},
  number  = {2},
  pages   = {95--112},
  year    = {1959},
  doi     = {10.1007/BF02289823}
}""",
    "westfall1993": """@book{westfall1993,
  author    = {Westfall, Peter H. and Young, S. Stanley},
  title     = {Resampling-Based Multiple Testing: Examples and Methods for p-Value Adjustment},
  publisher = {Wiley},
  address   = {New York},
  year      = {1993}
}""",
    "schuirmann1987tost": """@article{schuirmann1987tost,
  author  = {Schuirmann, Donald J.},
  title   = {A comparison of the two one-sided tests procedure and the power approach for assessing the
             equivalence of average bioavailability},
  journal = {Journal of Pharmacokinetics and Biopharmaceutics},
  volume  = {15},
  number  = {6},
  pages   = {657--680},
  year    = {1987},
  doi     = {10.1007/BF01068419}
}""",
    "berger1982iut": """@article{berger1982iut,
  author  = {Berger, Roger L.},
  title   = {Multiparameter hypothesis testing and acceptance sampling},
  journal = {Technometrics},
  volume  = {24},
  number  = {4},
  pages   = {295--300},
  year    = {1982},
  doi     = {10.1080/00401706.1982.10487790}
}""",
    "krishnamoorthy2003lognormal": """@article{krishnamoorthy2003lognormal,
  author  = {Krishnamoorthy, K. and Mathew, Thomas},
  title   = {Inferences on the means of lognormal distributions using generalized p-values and generalized
             confidence intervals},
  journal = {Journal of Statistical Planning and Inference},
  volume  = {115},
  number  = {1},
  pages   = {103--121},
  year    = {2003},
  doi     = {10.1016/S0378-3758(02)00153-2}
}""",
    "berger1994nuisance": """@article{berger1994nuisance,
  author  = {Berger, Roger L. and Boos, Dennis D.},
  title   = {P values maximized over a confidence set for the nuisance parameter},
  journal = {Journal of the American Statistical Association},
  volume  = {89},
  number  = {427},
  pages   = {1012--1016},
  year    = {1994},
  doi     = {10.1080/01621459.1994.10476836}
}""",
    "hsu1999stepwise": """@article{hsu1999stepwise,
  author  = {Hsu, Jason C. and Berger, Roger L.},
  title   = {Stepwise confidence intervals without multiplicity adjustment for dose-response and toxicity studies},
  journal = {Journal of the American Statistical Association},
  volume  = {94},
  number  = {446},
  pages   = {468--482},
  year    = {1999},
  doi     = {10.1080/01621459.1999.10474141}
}""",
    "lan1983spending": """@article{lan1983spending,
  author  = {Lan, K. K. Gordon and DeMets, David L.},
  title   = {Discrete sequential boundaries for clinical trials},
  journal = {Biometrika},
  volume  = {70},
  number  = {3},
  pages   = {659--663},
  year    = {1983},
  doi     = {10.1093/biomet/70.3.659}
}""",
    "holm1979": """@article{holm1979,
  author  = {Holm, Sture},
  title   = {A simple sequentially rejective multiple test procedure},
  journal = {Scandinavian Journal of Statistics},
  volume  = {6},
  number  = {2},
  pages   = {65--70},
  year    = {1979}
}""",
    "friedman1937": """@article{friedman1937,
  author  = {Friedman, Milton},
  title   = {The use of ranks to avoid the assumption of normality implicit in the analysis of variance},
  journal = {Journal of the American Statistical Association},
  volume  = {32},
  number  = {200},
  pages   = {675--701},
  year    = {1937},
  doi     = {10.1080/01621459.1937.10503522}
}""",
    "patterson1971reml": """@article{patterson1971reml,
  author  = {Patterson, H. Desmond and Thompson, Robin},
  title   = {Recovery of inter-block information when block sizes are unequal},
  journal = {Biometrika},
  volume  = {58},
  number  = {3},
  pages   = {545--554},
  year    = {1971},
  doi     = {10.1093/biomet/58.3.545}
}""",
    "olejnik2003eta": """@article{olejnik2003eta,
  author  = {Olejnik, Stephen and Algina, James},
  title   = {Generalized eta and omega squared statistics: measures of effect size for some common research designs},
  journal = {Psychological Methods},
  volume  = {8},
  number  = {4},
  pages   = {434--447},
  year    = {2003},
  doi     = {10.1037/1082-989X.8.4.434}
}""",
    "dodge2020finetuning": """@misc{dodge2020finetuning,
  author        = {Dodge, Jesse and Ilharco, Gabriel and Schwartz, Roy and Farhadi, Ali and Hajishirzi, Hannaneh
                   and Smith, Noah},
  title         = {Fine-Tuning Pretrained Language Models: Weight Initializations, Data Orders, and Early Stopping},
  year          = {2020},
  eprint        = {2002.06305},
  archivePrefix = {arXiv},
  url           = {https://arxiv.org/abs/2002.06305}
}""",
    "graybill1980mls": """@article{graybill1980mls,
  author  = {Graybill, Franklin A. and Wang, Chih-Ming},
  title   = {Confidence intervals on nonnegative linear combinations of variances},
  journal = {Journal of the American Statistical Association},
  volume  = {75},
  number  = {372},
  pages   = {869--873},
  year    = {1980},
  doi     = {10.1080/01621459.1980.10477565}
}""",
    "burdick1992variance": """@book{burdick1992variance,
  author    = {Burdick, Richard K. and Graybill, Franklin A.},
  title     = {Confidence Intervals on Variance Components},
  publisher = {Marcel Dekker},
  address   = {New York},
  year      = {1992}
}""",
    "bonett2006sd": r"""@article{bonett2006sd,
  author  = {Bonett, Douglas G.},
  title   = {Approximate confidence interval for standard deviation of nonnormal distributions},
  journal = {Computational Statistics \& Data Analysis},
  volume  = {50},
  number  = {3},
  pages   = {775--782},
  year    = {2006},
  doi     = {10.1016/j.csda.2004.10.003}
}""",
    "joanes1998kurtosis": """@article{joanes1998kurtosis,
  author  = {Joanes, D. N. and Gill, C. A.},
  title   = {Comparing measures of sample skewness and kurtosis},
  journal = {Journal of the Royal Statistical Society: Series D (The Statistician)},
  volume  = {47},
  number  = {1},
  pages   = {183--189},
  year    = {1998},
  doi     = {10.1111/1467-9884.00122}
}""",
}

# Always written: the tool's own statistics stack and the paper, whether or not a sentence names them.
ALWAYS = ("forgetinit2026", "abril2023pymc", "seyboldt2024nutpie", "kumar2019arviz")


def bibtex(keys: list[str] | tuple[str, ...]) -> str:
    """references.bib: the entries of ``keys`` (in order, once each) and of :data:`ALWAYS`.

    An unknown key is a programming error (a sentence cites what the table lacks), so it raises."""
    wanted = list(dict.fromkeys([*ALWAYS, *keys]))
    missing = [k for k in wanted if k not in REFERENCES]
    if missing:
        raise KeyError(f"no BibTeX entry for {', '.join(missing)} (reports/references.py)")
    return "\n\n".join(REFERENCES[k] for k in wanted) + "\n"


__all__ = ["ALWAYS", "REFERENCES", "bibtex"]
